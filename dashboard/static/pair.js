// Two runs side by side (#/pair?a=ID&b=ID): how they are related, each one's facts, the input and
// output of each (once where they are the same), their steps aligned row by row (a step on one side
// only against a gap) and both scorecards by criterion with each grader's reason. Also how a pair is
// picked: two checkboxes on the runs page, or a run's links to the runs it is naturally compared with.

import { api, enc, h, score, show, usd, verdict, when } from "./ui.js";

const pairHref = (a, b) => `#/pair?a=${enc(a)}&b=${enc(b)}`;

function cutNote(t) {
  if (!t || !t.cut) return null;
  return h("div", { class: "muted", testid: "cut" }, `cut: ${t.text.length.toLocaleString()} of ${t.chars.toLocaleString()} characters shown`);
}

const block = (t, testid) => [h("pre", { testid }, t.text), cutNote(t)];

function stepCell(s, side) {
  if (!s) return h("td", { class: "gap", testid: `gap-${side}` }, "no step here");
  const head = `#${s.index + 1} ${s.role}${s.name ? ` · ${s.name}` : ""}${s.is_error ? " · error" : ""}`;
  return h("td", { testid: `step-${side}`, "data-role": s.role },
    h("div", { class: `message ${s.role}` },
      h("div", { class: "role" }, head),
      s.reasoning ? h("details", {}, h("summary", {}, "reasoning"), block(s.reasoning)) : null,
      s.content.text || s.content.cut ? block(s.content, "content") : null,
      s.calls.map((c) => h("div", { testid: "tool-call" }, h("strong", {}, `calls ${c.name}`), block(c.arguments))),
      s.calls_cut ? h("div", { class: "muted" }, `${s.calls_cut} more tool calls not shown`) : null));
}

const KIND = { same: "same", changed: "changed", a_only: "a only", b_only: "b only" };

function stepsTable(pair) {
  const counts = Object.fromEntries(Object.keys(KIND).map((k) => [k, pair.rows.filter((r) => r.kind === k).length]));
  return h("div", {},
    h("p", { class: "muted", testid: "steps-summary" }, Object.entries(KIND).map(([k, said]) => `${counts[k]} ${said}`).join(" · ")),
    h("table", { testid: "aligned", class: "pair" },
      h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, `a (${pair.a.steps} steps)`), h("th", {}, `b (${pair.b.steps} steps)`))),
      h("tbody", {}, pair.rows.map((row) => h("tr", { testid: "aligned-row", "data-kind": row.kind, class: `row-${row.kind}` },
        h("td", { class: "muted kind" }, KIND[row.kind]), stepCell(row.a, "a"), stepCell(row.b, "b"))))),
    pair.rows_cut ? h("p", { class: "muted", testid: "rows-cut" }, `${pair.rows_cut} more aligned rows not shown: open each run for all its steps`) : null,
    pair.steps_cut ? h("p", { class: "muted" }, "a run has more steps than are aligned here: open it for the rest") : null);
}

function twoTexts(title, both, testid) {
  if (both.same && !both.a.chars) return null;
  if (both.same) return [h("h2", {}, `${title} (the same for both)`), ...block(both.a, `${testid}-both`)];
  return [h("h2", {}, title), h("div", { class: "pair-columns" },
    h("div", {}, h("div", { class: "muted" }, "a"), block(both.a, `${testid}-a`)),
    h("div", {}, h("div", { class: "muted" }, "b"), block(both.b, `${testid}-b`)))];
}

function factsTable(pair) {
  const { a, b } = pair;
  const rows = [
    ["run", (s) => h("a", { href: `#/run/${enc(s.id)}` }, s.id)],
    ["machine", (s) => h("a", { href: `#/runs/${enc(s.machine)}` }, s.machine)],
    ["version", (s) => s.version || "—"], ["model", (s) => s.model], ["harness", (s) => s.harness],
    ["case", (s) => (s.case_id ? `${s.case_id}${s.trial !== null ? ` (trial ${s.trial})` : ""}` : "—")],
    ["started", (s) => when(s.created_at)], ["status", (s) => (s.error ? [s.status, ": ", s.error.text] : s.status)],
    ["score", (s) => verdict(s)], ["cost", (s) => usd(s.cost_usd)], ["steps", (s) => String(s.steps)],
    ["tags", (s) => s.tags.join("; ") || "—"],
    ["corrects", (s) => (s.forked_from ? h("a", { href: `#/run/${enc(s.forked_from)}` }, s.forked_from) : "—")],
    ["correction", (s) => (s.correction ? s.correction.text : "—")],
  ];
  return h("table", { testid: "pair-facts", class: "pair" },
    h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "a"), h("th", {}, "b"))),
    h("tbody", {}, rows.map(([label, of]) => {
      const [left, right] = [h("td", { testid: "fact-a" }, of(a)), h("td", { testid: "fact-b" }, of(b))];
      const differs = label !== "run" && left.textContent !== right.textContent;
      return h("tr", { "data-fact": label, class: differs ? "differs" : undefined }, h("td", { class: "muted" }, label), left, right);
    })));
}

function gradeCells(g, side, graded) {
  if (!g) return [h("td", { class: "muted", testid: `score-${side}` }, "—"), h("td", { class: "muted", testid: `reason-${side}` }, graded ? "not graded on this criterion" : "the run is not graded")];
  const shown = g.score === null ? h("span", { class: "unscored" }, "UNSCORED") : score(g.score);
  return [h("td", { class: "num", testid: `score-${side}` }, shown),
    h("td", { testid: `reason-${side}` }, h("div", { class: "muted" }, g.grader), g.reason.text, cutNote(g.reason))];
}

function diffCell(diff) {
  if (diff === null) return h("td", { class: "num muted", testid: "diff" }, "—");
  const tone = diff > 0 ? "pass" : diff < 0 ? "fail" : "muted";
  return h("td", { class: `num ${tone}`, testid: "diff" }, `${diff > 0 ? "+" : ""}${diff.toFixed(2)}`);
}

function scorecards(pair) {
  if (!pair.a.graded && !pair.b.graded) return h("p", { class: "muted" }, "neither run is graded");
  return h("div", {},
    h("table", { testid: "pair-scorecard", class: "pair" },
      h("thead", {}, h("tr", {}, ["criterion", "a", "a's grader and reason", "b", "b's grader and reason", "b − a"].map((t) => h("th", { class: t.length < 6 ? "narrow" : undefined }, t)))),
      h("tbody", {}, pair.criteria.map((c) => h("tr", { testid: "criterion-row", "data-criterion": c.criterion },
        h("td", {}, c.criterion), gradeCells(c.a, "a", pair.a.graded), gradeCells(c.b, "b", pair.b.graded), diffCell(c.diff))))),
    pair.criteria_cut ? h("p", { class: "muted" }, `${pair.criteria_cut} more criteria not shown`) : null);
}

export async function pairPage(query) {
  const a = query.get("a") || "", b = query.get("b") || "";
  const pair = await api(`/api/pair?a=${enc(a)}&b=${enc(b)}`);
  const note = [pair.a, pair.b].map((s) => s.correction).find((c) => c);
  show(
    h("h1", {}, "Two runs side by side"),
    h("p", { class: "summary", testid: "relation", "data-relation": pair.relation }, pair.said),
    note && ["corrects", "corrected_by"].includes(pair.relation) ? h("div", { class: "card", testid: "correction" }, h("div", { class: "muted" }, "the correction"), block(note)) : null,
    h("p", {}, h("a", { href: pairHref(pair.b.id, pair.a.id), testid: "swap" }, "swap a and b")),
    factsTable(pair),
    h("h2", {}, "Scorecards"), scorecards(pair),
    twoTexts("Instructions", pair.instructions, "instructions"),
    twoTexts("Input", pair.input, "input"),
    h("h2", {}, "Steps, aligned"), stepsTable(pair),
    twoTexts("Output", pair.output, "output"),
  );
}

// The runs page's picking: a checkbox a row, and a button that opens the two picked (the older as a).
export function pickCell(run) {
  return h("td", {}, h("input", { type: "checkbox", testid: "pick", value: run.id, title: "pick two runs to compare side by side", onchange: picked }));
}

const chosen = () => [...document.querySelectorAll("input[data-testid=pick]:checked")].map((box) => box.value);

function picked() {
  const button = document.querySelector("[data-testid=compare-picked]");
  if (button) button.disabled = chosen().length !== 2;
}

export function compareButton() {
  return h("button", { testid: "compare-picked", disabled: true, title: "pick exactly two runs", onclick: () => {
    const [newer, older] = chosen();
    if (older && chosen().length === 2) location.hash = pairHref(older, newer);
  } }, "compare side by side");
}

// A run's page: links to the runs it is naturally compared with, loaded after the page is drawn: the
// run it corrects, and the newest run of its case on another version (one bounded page of its case).
export function pairLinks(run) {
  const links = h("p", { testid: "pair-links", class: "muted" });
  const add = (href, label) => links.append(links.childNodes.length ? " · " : "", h("a", { href }, label));
  if (run.forked_from) add(pairHref(run.forked_from, run.id), "compare with the run it corrects");
  if (run.case_id) {
    api(`/api/runs?${new URLSearchParams({ machine: run.machine, case: run.case_id, limit: "20" })}`).then((page) => {
      const other = page.runs.find((r) => r.id !== run.id && r.version !== run.version);
      if (!other) return;
      const [older, newer] = other.created_at < run.created_at ? [other, run] : [run, other];
      add(pairHref(older.id, newer.id), `compare with case ${run.case_id} on ${other.version || "no version"}`);
    }).catch(() => {});
  }
  return links;
}
