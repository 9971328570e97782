// The runs in progress, and the stored runs of a machine with the filters that narrow them.

import { compareButton, pickCell } from "./pair.js";
import { api, enc, h, select, show, state, usd, verdict, when } from "./ui.js";

export async function runningPage() {
  const list = h("div", { testid: "running" });
  const draw = (runs) => {
    if (runs.length === 0) {
      list.replaceChildren(h("p", { class: "muted" }, "nothing is running now"));
      return;
    }
    list.replaceChildren(...runs.map((r) =>
      h("div", { class: "card", testid: "running-run", "data-run": r.run },
        h("div", {}, h("strong", {}, r.machine), " ", h("span", { class: "muted" }, `${r.model} · ${r.case_id || "no case"} · started ${when(new Date(r.at * 1000).toISOString())}`)),
        h("div", { class: "muted" }, r.input || ""),
        (r.steps || []).map((s) => h("div", { class: "step" }, `${s.type}${s.tool ? ` ${s.tool}` : ""}${s.text ? `: ${s.text}` : ""}`)),
      )));
  };
  show(h("h1", {}, "Running now"), list);
  draw(await api("/api/running"));
  state.current.onEvent = async (event) => {
    if (["run_started", "step", "run_finished"].includes(event.kind)) draw(await api("/api/running"));
  };
}
const OUTCOMES = ["", "pass", "fail", "unscored", "error", "ungraded"];
const TAGS = ["", "good", "bad", "correction"];
const FILTERS = ["case", "outcome", "min_score", "max_score", "model", "version", "tag", "suite", "since", "until"];

function filterForm(machine, query, choices) {
  const field = (label, control) => h("label", {}, label, control);
  const form = h("form", { class: "filters", testid: "filters" },
    field("case", select("case", ["", ...choices.cases], query.get("case") || "")),
    field("outcome", select("outcome", OUTCOMES, query.get("outcome") || "")),
    field("min score", h("input", { name: "min_score", type: "number", min: 0, max: 1, step: 0.05, value: query.get("min_score") || "" })),
    field("max score", h("input", { name: "max_score", type: "number", min: 0, max: 1, step: 0.05, value: query.get("max_score") || "" })),
    field("model", select("model", ["", ...choices.models], query.get("model") || "")),
    field("version", select("version", ["", ...choices.versions], query.get("version") || "")),
    field("tag", select("tag", TAGS, query.get("tag") || "")),
    field("suite", select("suite", ["", ...choices.suites.map((s) => s.id)], query.get("suite") || "")),
    field("since", h("input", { name: "since", type: "datetime-local", value: query.get("since") || "" })),
    field("until", h("input", { name: "until", type: "datetime-local", value: query.get("until") || "" })),
    h("button", { type: "submit" }, "filter"),
    h("a", { href: `#/runs/${enc(machine)}` }, "clear"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) chosen.set(key, value);
    location.hash = `#/runs/${enc(machine)}${chosen.size ? `?${chosen}` : ""}`;
  });
  return form;
}

function runRow(run, fresh = false) {
  return h("tr", { testid: "run-row", "data-run": run.id, class: fresh ? "new" : undefined },
    h("td", {}, h("a", { href: `#/run/${enc(run.id)}` }, when(run.created_at))),
    h("td", {}, verdict(run)),
    h("td", {}, run.case_id || ""),
    h("td", {}, run.version || ""),
    h("td", {}, run.model),
    h("td", { class: "num" }, usd(run.cost_usd)),
    h("td", {}, (run.tags || []).join(" ")),
    h("td", { class: "muted" }, run.error || (run.failing.length ? `below full marks: ${run.failing.join(", ")}` : run.input_preview)),
    pickCell(run),
  );
}

export async function runsPage(machine, query) {
  const params = new URLSearchParams({ machine });
  for (const key of FILTERS) if (query.get(key)) params.set(key, key === "since" || key === "until" ? new Date(query.get(key)).toISOString() : query.get(key));
  const [first, info] = await Promise.all([api(`/api/runs?${params}`), api(`/api/machines/${enc(machine)}/trend`)]);
  const body = h("tbody", {});
  const shown = new Set();
  let cursor = first.next;
  const add = (runs, fresh = false, atTop = false) => {
    const rows = runs.filter((r) => !shown.has(r.id)).map((r) => (shown.add(r.id), runRow(r, fresh)));
    if (atTop) body.prepend(...rows); else body.append(...rows);
  };
  add(first.runs);
  const more = h("button", { testid: "more", onclick: async () => {
    const page = await api(`/api/runs?${params}&cursor=${enc(cursor)}`);
    add(page.runs);
    cursor = page.next;
    more.hidden = !cursor;
    note.textContent = page.window_full && page.runs.length === 0 ? "no match in the runs read so far: more searches further back" : "";
  } }, "more");
  more.hidden = !cursor;
  const note = h("p", { class: "muted" }, first.window_full && first.runs.length === 0 ? "no match in the newest runs: more searches further back" : "");
  show(
    h("h1", {}, `Runs of ${machine}`),
    h("p", {}, h("a", { href: `#/review/${enc(machine)}` }, "review the runs waiting for a verdict"), " · ",
      h("a", { href: `#/machine/${enc(machine)}` }, "quality & spend"), " · ", h("a", { href: `#/compare/${enc(machine)}` }, "compare")),
    filterForm(machine, query, info.choices),
    compareButton(),
    h("table", { testid: "runs" },
      h("thead", {}, h("tr", {}, ["started", "score", "case", "version", "model", "cost", "tags", "input, or why it failed", "pick"].map((t) => h("th", {}, t)))),
      body),
    note, more,
  );
  state.current.onEvent = async (event) => {
    if (event.kind === "store" || (event.kind === "run_finished" && event.machine === machine)) {
      const page = await api(`/api/runs?${params}`);
      add(page.runs, true, true);
    }
  };
}
