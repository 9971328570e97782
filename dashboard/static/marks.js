// Marking a run from the page, as the chat's /good, /bad and /correct do: good (with the answer it
// should have given, if the person writes one), bad with a note, a correction noted, or the run made
// again with the correction (a model call, under a cap the person sets, after the browser asks).
// Each is one POST; what the server stored is shown back as text.

import { enc, h, post } from "./ui.js";

const DEFAULT_CAP_USD = 0.1;

function tagText(tag) {
  const answer = tag.answer ? ` (answer: ${tag.answer.slice(0, 80)}${tag.answer.length > 80 ? "…" : ""})` : "";
  return `${tag.kind}${tag.note ? `: ${tag.note}` : ""}${answer}`;
}

export function tagsText(tags) {
  return (tags || []).map(tagText).join("; ") || "not marked";
}

// What the page says of a run made again with a correction: a link to it and to the two side by side.
function madeAgain(run, made) {
  if (!made) return [];
  if (!made.id) return [` · not made again: ${made.error}`];
  return [" · made again as ", h("a", { href: `#/run/${enc(made.id)}`, testid: "made-again" }, made.id),
    made.error ? ` (${made.error})` : "", " · ", h("a", { href: `#/pair?a=${enc(run.id)}&b=${enc(made.id)}` }, "side by side")];
}

// The panel for one run. onMarked(answer, kind) runs after the server stored a mark.
export function markPanel(run, { onMarked = () => {} } = {}) {
  const marks = h("span", { testid: "marks" }, tagsText(run.tags));
  const said = h("span", { class: "muted", testid: "mark-said", role: "status" });
  const form = h("div", { class: "mark-form", testid: "mark-form" });
  const send = async (body) => {
    said.textContent = "saving…";
    try {
      const answer = await post(`/api/runs/${enc(run.id)}/marks`, body);
      marks.textContent = tagsText(answer.tags);
      said.replaceChildren(`marked ${body.kind}`, ...madeAgain(run, answer.corrected));
      form.replaceChildren();
      onMarked(answer, body.kind);
    } catch (error) {
      said.textContent = `not saved: ${error.message}`;
      said.className = "error";
    }
  };
  const open = (kind) => {
    said.textContent = "";
    said.className = "muted";
    const text = kind === "good"
      ? h("textarea", { name: "answer", rows: 4, placeholder: "the answer it should have given (optional: leave empty to keep its own)", testid: "mark-answer" })
      : h("input", { name: "note", size: 60, placeholder: kind === "bad" ? "why it is bad, e.g. too terse" : "what should change, e.g. answer in one line", testid: "mark-note" });
    const again = h("input", { type: "checkbox", name: "run_again", testid: "mark-again" });
    const cap = h("input", { type: "number", name: "budget_usd", min: 0.001, max: 10, step: 0.01, value: DEFAULT_CAP_USD, testid: "mark-cap" });
    const submit = () => {
      const value = text.value.trim();
      if (kind === "good") return send({ kind, answer: value || null });
      if (!value) { said.textContent = `a ${kind} mark needs a note saying why`; return undefined; }
      if (kind === "correction" && again.checked) {
        const usd = Number(cap.value);
        const asked = `Run ${run.machine} again on ${run.model} with this correction? It is a model call, spending at most $${usd}.`;
        if (!window.confirm(asked)) return undefined;
        return send({ kind, note: value, run_again: true, budget_usd: usd });
      }
      return send({ kind, note: value });
    };
    text.addEventListener("keydown", (event) => {
      if (event.key === "Escape") { form.replaceChildren(); event.stopPropagation(); }
      else if (event.key === "Enter" && (kind !== "good" || event.ctrlKey || event.metaKey)) { event.preventDefault(); submit(); }
    });
    form.replaceChildren(
      text,
      kind === "correction" ? h("label", {}, again, " run it again with this correction, spending at most $", cap) : null,
      h("button", { onclick: submit, testid: "mark-save" }, `mark ${kind}`),
      h("button", { onclick: () => form.replaceChildren() }, "cancel"),
    );
    text.focus();
  };
  const panel = h("div", { class: "card", testid: "mark-panel" },
    h("div", {}, h("strong", {}, "marks "), marks),
    h("div", { class: "mark-buttons" },
      h("button", { onclick: () => open("good"), testid: "mark-good" }, "good…"),
      h("button", { onclick: () => open("bad"), testid: "mark-bad" }, "bad…"),
      h("button", { onclick: () => open("correction"), testid: "mark-correct" }, "correct…"),
      said),
    form);
  panel.open = open;
  panel.send = send;
  return panel;
}
