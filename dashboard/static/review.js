// The review queue: a machine's runs waiting for a verdict, one at a time, one key per decision. The
// server answers the next unmarked runs of one kind (failing, unscored, ungraded, observed, disagreeing);
// a run marked or skipped here is not shown again on this page.

import { markPanel } from "./marks.js";
import { message, scorecardView } from "./run.js";
import { api, enc, h, show, state, verdict, when } from "./ui.js";

const KINDS = ["failing", "unscored", "ungraded", "observed", "disagreeing"];
const KEYS = "g good · a good with the answer it should have given · b bad (a note) · c correction (a note) · s skip · o open the run";

export async function reviewPage(machine, query) {
  const kind = KINDS.includes(query.get("kind")) ? query.get("kind") : "failing";
  const waiting = [];
  const seen = new Set();
  let cursor = null, exhausted = false, done = 0, skipped = 0, panel = null;
  const body = h("div", { testid: "review-run" });
  const count = h("p", { class: "muted", testid: "review-count" });

  const fill = async () => {
    while (waiting.length === 0 && !exhausted) {
      const params = new URLSearchParams({ machine, kind, ...(cursor ? { cursor } : {}) });
      const answer = await api(`/api/review?${params}`);
      for (const run of answer.runs) if (!seen.has(run.id)) { seen.add(run.id); waiting.push(run); }
      cursor = answer.next;
      exhausted = !cursor;
    }
  };
  const draw = async () => {
    await fill();
    count.textContent = `${done} marked · ${skipped} skipped on this page`;
    if (waiting.length === 0) {
      panel = null;
      body.replaceChildren(h("p", { testid: "review-empty" }, `no ${kind} run of ${machine} waits for a verdict`));
      return;
    }
    const run = await api(`/api/runs/${enc(waiting[0].id)}`);
    panel = markPanel(run, { onMarked: () => next(true) });
    body.replaceChildren(
      h("div", { class: "card grid", testid: "review-facts", "data-run": run.id },
        h("span", { class: "muted" }, "run"), h("a", { href: `#/run/${enc(run.id)}` }, run.id),
        h("span", { class: "muted" }, "started"), h("span", {}, when(run.created_at)),
        h("span", { class: "muted" }, "case"), h("span", {}, run.case_id || "—"),
        h("span", { class: "muted" }, "version"), h("span", {}, run.version || "—"),
        h("span", { class: "muted" }, "score"), verdict({ ...run, graded: Boolean(run.scorecard), score: run.scorecard ? run.scorecard.score : null, passed: run.scorecard ? run.scorecard.passed : null })),
      panel,
      h("h2", {}, "Input"), h("pre", { testid: "run-input" }, run.input),
      h("h2", {}, "Output"), h("pre", { testid: "run-output" }, run.output || run.error || ""),
      scorecardView(run),
      h("details", {}, h("summary", {}, `steps (${(run.trajectory || []).length})`), (run.trajectory || []).map(message)),
    );
  };
  const next = async (marked) => {
    waiting.shift();
    if (marked) done += 1; else skipped += 1;
    await draw();
  };

  show(
    h("h1", {}, `Review ${machine}`),
    h("p", { testid: "review-kinds" }, KINDS.flatMap((k, i) => [i ? " · " : "", k === kind ? h("strong", {}, k) : h("a", { href: `#/review/${enc(machine)}?kind=${k}` }, k)])),
    h("p", { class: "muted", testid: "review-keys" }, KEYS),
    count, body,
  );
  await draw();
  state.current.onKey = (event) => {
    if (!panel || waiting.length === 0) return;
    const run = waiting[0];
    if (event.key === "g") panel.send({ kind: "good" });
    else if (event.key === "a") panel.open("good");
    else if (event.key === "b") panel.open("bad");
    else if (event.key === "c") panel.open("correction");
    else if (event.key === "s" || event.key === "j") next(false);
    else if (event.key === "o") location.hash = `#/run/${enc(run.id)}`;
    else return;
    event.preventDefault();
  };
}
