// One run: its facts, the person's marks (and the buttons that make them), its scorecard with each
// grader's reason, its input, steps and output.

import { markPanel } from "./marks.js";
import { pairLinks } from "./pair.js";
import { api, enc, h, score, show, usd, verdict, when } from "./ui.js";

export function message(m) {
  const parts = [h("div", { class: "role" }, m.role + (m.name ? ` · ${m.name}` : "") + (m.is_error ? " · error" : ""))];
  if (m.reasoning) parts.push(h("details", {}, h("summary", {}, "reasoning"), h("pre", {}, m.reasoning)));
  if (m.content) parts.push(h("pre", {}, m.content));
  for (const call of m.tool_calls || []) {
    parts.push(h("div", { testid: "tool-call" }, h("strong", {}, `calls ${call.name}`), h("pre", {}, call.arguments ? JSON.stringify(call.arguments, null, 2) : call.raw_arguments || "")));
  }
  for (const edit of m.edits || []) parts.push(editView(edit));
  return h("div", { class: `message ${m.role}` }, parts);
}

// A change to the person's own files a tool proposed, and what they answered (folded: the diff shown).
function editView(edit) {
  const what = edit.command !== null && edit.command !== undefined ? `command ${edit.command}` : `change to ${edit.path}`;
  return h("details", { testid: "edit", "data-decision": edit.decision },
    h("summary", {}, h("span", { class: edit.decision === "approved" ? "pass" : "fail" }, `${what} ${edit.decision}`), ` by ${edit.by} at ${when(edit.at)}`),
    h("pre", {}, edit.diff));
}

export async function runPage(id) {
  const run = await api(`/api/runs/${enc(id)}`);
  const seconds = run.timings && run.timings.finished_at ? (new Date(run.timings.finished_at) - new Date(run.timings.started_at)) / 1000 : null;
  const facts = [
    ["machine", h("a", { href: `#/runs/${enc(run.machine)}` }, run.machine)],
    ["version", run.version || "—"], ["model", run.model], ["harness", run.harness],
    ["status", run.status], ["case", run.case_id ? `${run.case_id}${run.trial !== null ? ` (trial ${run.trial})` : ""}` : "—"],
    ["suite", run.suite_id || "—"], ["started", when(run.timings && run.timings.started_at)],
    ["took", seconds === null ? "—" : `${seconds.toFixed(2)} s`], ["cost", usd(run.cost_usd)],
    ["tokens", `${run.usage.input_tokens} in (${run.usage.cached_input_tokens} cached), ${run.usage.output_tokens} out`],
  ];
  show(
    h("h1", {}, `Run ${run.id}`),
    h("div", { class: "card grid", testid: "run-facts" }, facts.flatMap(([k, v]) => [h("span", { class: "muted" }, k), h("span", {}, v)])),
    markPanel(run),
    pairLinks(run),
    run.error ? h("p", { class: "error", testid: "run-error" }, run.error) : null,
    h("h2", {}, "Scorecard"),
    scorecardView(run),
    h("h2", {}, "Input"), h("pre", { testid: "run-input" }, run.input),
    h("h2", {}, "Steps"), h("div", { testid: "trajectory" }, (run.trajectory || []).map(message)),
    h("h2", {}, "Output"), h("pre", { testid: "run-output" }, run.output || ""),
  );
}

// The scorecard: the score against the pass score, and each criterion's grade, grader and reason.
export function scorecardView(run) {
  const card = run.scorecard;
  const criteria = card ? Object.values(card.criteria) : [];
  return card
    ? h("div", {},
        h("p", { class: "summary" }, "score ", verdict({ ...run, graded: true, score: card.score, passed: card.passed }), ` (pass score ${card.pass_score})`),
        h("table", { testid: "scorecard" },
          h("thead", {}, h("tr", {}, ["criterion", "weight", "score", "grader", "reason"].map((t) => h("th", {}, t)))),
          h("tbody", {}, criteria.map((c) => h("tr", {},
            h("td", {}, c.criterion), h("td", { class: "num" }, c.weight),
            h("td", { class: "num" }, c.score === null ? h("span", { class: "unscored" }, "UNSCORED") : score(c.score)),
            h("td", {}, c.grader), h("td", { testid: "reason" }, c.reason))))))
    : h("p", { class: "muted" }, "not graded");
}
