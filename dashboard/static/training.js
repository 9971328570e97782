// The training records, and one training's loss (and reward) per step, checkpoints and settings.

import { legend, lineChart } from "./chart.js";
import { api, enc, h, num, percent, show, state } from "./ui.js";

export async function trainingsPage() {
  const rows = await api("/api/training");
  show(
    h("h1", {}, "Training records"),
    rows.length === 0 ? h("p", { class: "muted" }, "no training records yet") :
    h("table", { testid: "trainings" },
      h("thead", {}, h("tr", {}, ["record", "machine", "trainer", "steps", "outcome"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("td", {}, h("a", { href: `#/training/${enc(r.id)}` }, r.id)), h("td", {}, r.machine),
        h("td", {}, `${r.trainer} on ${r.base_model}`), h("td", { class: "num" }, `${r.steps}${r.planned_steps ? `/${r.planned_steps}` : ""}`),
        h("td", {}, r.outcome))))),
  );
}

function rlCells(step) {
  if (!step) return ["—", "—", "—", "—"];
  return [num(step.reward, 3), percent(step.flat_share), num(step.kl, 4), num(step.entropy, 3)];
}

export async function trainingPage(id) {
  const t = await api(`/api/training/${enc(id)}`);
  const r = t.record, s = r.settings, plan = r.plan;
  const losses = t.steps.map((step) => [step.step, step.loss]);
  const rl = r.rl, rewarded = t.steps.filter((step) => step.rl);
  const rewards = rewarded.map((step) => [step.step, step.rl.reward]);
  const criteria = [...new Set(rewarded.flatMap((step) => Object.keys(step.rl.criteria || {})))];
  const colors = ["#6750a4", "#7d5260", "#386a20", "#8c4a00", "#00639b"];
  const rewardSeries = [{ name: "reward", color: "#0b57d0", points: rewards },
    ...criteria.slice(0, colors.length).map((name, i) => ({ name, color: colors[i], points: rewarded.map((step) => [step.step, step.rl.criteria[name] ?? null]) }))];
  const facts = [
    ["machine", r.machine], ["trainer", `${r.trainer} on ${r.base_model}`], ["status", `${r.status}, ${r.steps} steps`],
    ["outcome", t.outcome], ["method", s.method],
    ["learning rate", `${plan ? plan.learning_rate : s.learning_rate ?? t.steps[0]?.learning_rate ?? "trainer's default"} (${s.lr_schedule})`],
    ...(rl ? [] : [["epochs × batch", `${s.epochs} × ${s.batch_size}`]]), ["LoRA rank", s.rank ?? "trainer's default"],
    ...(rl ? [] : [
      ["data", plan ? `${plan.examples} examples, ${plan.sequences} sequences, ${plan.tokens} tokens (${plan.target_tokens} targets)` : "—"],
      ["sources", Object.entries(r.selection.sources || {}).map(([k, v]) => `${k}: ${v}`).join("; ") || "—"]]),
    ["datasets", (r.datasets || []).map((d) => `${d.path} sha256 ${d.sha256.slice(0, 12)} (${d.rows} rows)`).join("; ") || "—"],
    ...(rl ? [["RL", `groups of ${rl.group} of ${rl.cases_per_step} cases a step, ${rl.rl_steps} steps, ${rl.loss}, temperature ${rl.temperature}, at most ${rl.max_tokens} tokens a reply`],
      ["samples", `${r.sampled} runs, marked as this training's`]] : []),
    ["gate", r.gate ? `${r.gate.file} sha256 ${r.gate.sha256.slice(0, 12)}, ${r.gate.trials} trial${r.gate.trials === 1 ? "" : "s"}, min z ${r.gate.min_z}` : "—"],
  ];
  show(
    h("h1", {}, `Training ${r.id}`),
    h("div", { class: "card grid", testid: "training-facts" }, facts.flatMap(([k, v]) => [h("span", { class: "muted" }, k), h("span", {}, v)])),
    ...(rewarded.length || rl ? [h("h2", {}, "Reward per step"),
      lineChart(rewardSeries, { yMin: 0, yMax: 1, xLabel: (x) => x.toFixed(0), testid: "reward-chart" }), legend(rewardSeries)] : []),
    h("h2", {}, "Loss per step"),
    lineChart([{ name: "loss", color: "#b3261e", points: losses }], { xLabel: (x) => x.toFixed(0), testid: "loss-chart" }),
    ...(rl ? [] : [h("p", { class: "muted" }, `loss by epoch: ${t.epoch_losses.map((l) => l.toFixed(4)).join(" → ") || "—"}`)]),
    h("h2", {}, "Checkpoints"),
    h("ul", { testid: "checkpoints" }, t.checkpoints.map((c) => h("li", {}, `step ${c.step}: ${c.model}`))),
    h("details", {}, h("summary", {}, `every step (${t.steps.length})`),
      h("table", {}, h("thead", {}, h("tr", {}, ["step", "epoch", "loss", ...(rl ? ["reward", "flat groups", "KL", "entropy"] : []), "tokens", "lr", "seconds"].map((x) => h("th", {}, x)))),
        h("tbody", {}, t.steps.map((st) => h("tr", {}, [st.step, st.epoch, num(st.loss, 4), ...(rl ? rlCells(st.rl) : []), st.tokens, st.learning_rate, st.seconds.toFixed(2)].map((v) => h("td", { class: "num" }, v))))))),
  );
  state.current.onEvent = async (event) => {
    if ((event.kind === "training_step" || event.kind === "checkpoint") && event.record === id) await trainingPage(id);
  };
}
