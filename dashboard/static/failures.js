// A machine's failures first: its newest runs by criterion (worst first), then its failing runs grouped
// by the grader's reason, the largest group first, each with its newest runs. Reasons and errors are
// model-written: set as text (ui.js's h), never as markup.

import { api, enc, h, percent, score, when } from "./ui.js";

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function criteriaTable(f) {
  if (f.criteria.length === 0) return h("p", { class: "muted", testid: "criteria" }, "no graded runs yet");
  const heads = ["criterion", "mean", "pass rate", "scored", "unscored", "fails"];
  return h("table", { testid: "criteria" },
    h("thead", {}, h("tr", {}, heads.map((t, i) => h("th", { class: i ? "num" : undefined }, t)))),
    h("tbody", {}, f.criteria.map((c) => h("tr", { "data-criterion": c.criterion },
      h("td", {}, c.criterion),
      h("td", { class: "num", testid: "mean" }, score(c.mean)),
      h("td", { class: "num", testid: "pass-rate" },
        h("span", { class: c.pass_rate === null ? "muted" : c.pass_rate < 1 ? "fail" : "pass" }, percent(c.pass_rate))),
      h("td", { class: "num" }, c.scored),
      h("td", { class: "num", testid: "unscored" }, c.unscored),
      h("td", { class: "num", testid: "fails" }, h("span", { class: c.fails ? "fail" : "muted" }, c.fails))))));
}

function groupCard(machine, g) {
  const failed = g.outcome === "error";
  const mean = g.mean === null ? "" : `, mean score ${score(g.mean)}`;
  return h("div", { class: "card failure", testid: "failure-group", "data-criterion": g.criterion },
    h("div", {},
      h("span", { class: failed ? "error" : "fail", testid: "group-criterion" }, g.criterion), " · ",
      h("strong", { testid: "group-count" }, plural(g.count, "run")),
      h("span", { class: "muted" }, `${mean}, newest ${when(g.newest)}`)),
    h("p", { class: "reason", testid: "group-reason" }, g.reason),
    h("div", { class: "muted" }, "newest: ",
      g.run_ids.flatMap((id, i) => [i ? ", " : "", h("a", { href: `#/run/${enc(id)}`, testid: "group-run" }, id)]),
      " · ", h("a", { href: `#/runs/${enc(machine)}?outcome=${g.outcome}` }, failed ? "every failed run" : "every failing run")));
}

export async function failuresSection(machine) {
  const f = await api(`/api/machines/${enc(machine)}/failures`);
  const over = `over its newest ${plural(f.runs, "run")} (at most ${f.window})`;
  const rest = f.left_out
    ? h("p", { class: "muted", testid: "left-out" }, `and ${plural(f.left_out, "failing grade")} in ${plural(f.left_out_groups, "smaller group")}`)
    : null;
  return [
    h("h2", {}, "By criterion"),
    h("p", { class: "muted" }, `Each criterion ${over}, the lowest pass rate first: the share of the runs where it was scored that it did not fail; ` +
      "a fail is a score below the run's pass score; unscored: the runs where it came back UNSCORED."),
    criteriaTable(f),
    h("h2", {}, "Failing runs by reason"),
    h("p", { class: "muted", testid: "failing-summary" },
      `${plural(f.failing, "failing grade")} ${over}, grouped by criterion and by what the grader said ` +
      "(reasons differing only in numbers, quoted words, case or spacing are one group), the largest first."),
    f.groups.length
      ? h("div", { testid: "failure-groups" }, f.groups.map((g) => groupCard(machine, g)), rest)
      : h("p", { class: "muted", testid: "failure-groups" }, "nothing failing"),
  ];
}
