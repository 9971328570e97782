// A machine's quality and spend over time, and two of its versions or suites compared case by case.

import { lineChart } from "./chart.js";
import { failuresSection } from "./failures.js";
import { api, enc, h, score, select, show, usd } from "./ui.js";

function buckets(points, count = 40) {
  if (points.length === 0) return [];
  const times = points.map((p) => new Date(p.at).getTime());
  const lo = Math.min(...times), hi = Math.max(...times), width = Math.max(1, (hi - lo) / count);
  const out = new Map();
  points.forEach((p, i) => {
    const key = Math.min(count - 1, Math.floor((times[i] - lo) / width));
    const b = out.get(key) || { at: lo + key * width, scores: [], cost: 0, runs: 0 };
    if (p.status === "error") b.scores.push(0); else if (p.score !== null) b.scores.push(p.score);
    b.cost += p.cost_usd; b.runs += 1;
    out.set(key, b);
  });
  return [...out.values()].sort((a, b) => a.at - b.at);
}

export async function machinePage(machine) {
  const [data, failures] = await Promise.all([api(`/api/machines/${enc(machine)}/trend`), failuresSection(machine)]);
  const bins = buckets(data.points);
  const day = (x) => new Date(x).toISOString().slice(5, 16).replace("T", " ");
  const quality = bins.map((b) => [b.at, b.scores.length ? b.scores.reduce((a, c) => a + c, 0) / b.scores.length : null]);
  const spend = bins.map((b) => [b.at, b.cost]);
  const scored = data.points.filter((p) => p.score !== null);
  const mean = scored.length ? scored.reduce((a, p) => a + p.score, 0) / scored.length : null;
  const total = data.points.reduce((a, p) => a + p.cost_usd, 0);
  show(
    h("h1", {}, `${machine}: quality and spend`),
    h("p", { class: "summary", testid: "trend-summary" }, `${data.points.length} newest runs: mean score ${score(mean)}, spent ${usd(total)}`),
    failures,
    h("h2", {}, "Mean score over time"),
    lineChart([{ name: "mean score", color: "#2b59c3", points: quality }], { yMin: 0, yMax: 1, xLabel: day, testid: "quality-chart" }),
    h("h2", {}, "Spend over time (USD per interval)"),
    lineChart([{ name: "spend", color: "#9a6700", points: spend }], { yMin: 0, xLabel: day, testid: "spend-chart" }),
    h("p", {}, h("a", { href: `#/runs/${enc(machine)}` }, "runs"), " · ", h("a", { href: `#/compare/${enc(machine)}` }, "compare two versions or suites")),
  );
}

// ---- comparison ------------------------------------------------------------------------------------

export async function comparePage(machine, query) {
  const info = await api(`/api/machines/${enc(machine)}/trend`);
  const by = query.get("by") || "version";
  const options = by === "version" ? info.choices.versions : info.choices.suites.map((s) => s.id);
  const a = query.get("a") || options[0] || "", b = query.get("b") || options[1] || options[0] || "";
  const form = h("form", { class: "filters", testid: "compare-form" },
    h("label", {}, "by", select("by", ["version", "suite"], by)),
    h("label", {}, "a", select("a", options, a)), h("label", {}, "b", select("b", options, b)),
    h("button", { type: "submit" }, "compare"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams(new FormData(form));
    if (chosen.get("by") !== by) { chosen.delete("a"); chosen.delete("b"); }
    location.hash = `#/compare/${enc(machine)}?${chosen}`;
  });
  const parts = [h("h1", {}, `${machine}: ${by} against ${by}`), form];
  if (a && b) {
    const c = await api(`/api/compare?${new URLSearchParams({ machine, by, a, b })}`);
    const signed = (d) => (d === null ? "—" : `${d > 0 ? "+" : ""}${d.toFixed(3)}`);
    const z = c.z === null ? "z —" : `z ${c.z.toFixed(2)}`;
    parts.push(
      h("p", { class: "summary", testid: "paired" },
        `${b} − ${a}: ${signed(c.diff)} (standard error ${c.se.toFixed(3)}, ${z}) over ${c.compared} cases; ${c.up} up, ${c.down} down` +
        (c.p_value === null ? "" : `, sign test p ${c.p_value.toPrecision(3)}`)),
      h("h2", {}, "Cases that moved most"),
      h("ul", { testid: "moved" }, c.moved.map((m) => h("li", {}, `${m.case_id}: ${score(m.a)} → ${score(m.b)} (${signed(m.diff)})`))),
      h("h2", {}, "Every case"),
      h("table", { testid: "compare" },
        h("thead", {}, h("tr", {}, ["case", `${a} mean`, "runs", `${b} mean`, "runs", "difference"].map((t) => h("th", {}, t)))),
        h("tbody", {}, c.cases.map((row) => h("tr", { "data-case": row.case_id },
          h("td", {}, row.case_id), h("td", { class: "num" }, score(row.a)), h("td", { class: "num" }, row.a_runs),
          h("td", { class: "num" }, score(row.b)), h("td", { class: "num" }, row.b_runs),
          h("td", { class: `num ${row.diff > 0 ? "pass" : row.diff < 0 ? "fail" : ""}` }, signed(row.diff)))))),
    );
  } else {
    parts.push(h("p", { class: "muted" }, `no ${by}s with runs to compare yet`));
  }
  show(...parts);
}
