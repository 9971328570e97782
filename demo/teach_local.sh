#!/usr/bin/env bash
# The learning loop for real, offline: a small open model (SmolLM2-135M, bundled with the install) does not
# follow signoff's rule; a scripted teacher's graded runs are distilled into it with LoRA on this machine;
# the checkpoint and the base are measured on held-out cases the teacher never answered; and commit makes
# the checkpoint live only because it won. Everything printed comes from the run; each step says its time.
set -euo pipefail
cd "$(dirname "$0")/.."
machine="$PWD/.venv/bin/machine"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
timed() {
  local start=$SECONDS
  "$@"
  printf '(%d s)\n' "$((SECONDS - start))"
}

# Training writes the machine's versions and checkpoints: it works on a copy of signoff in a workspace of
# its own, removed at the end.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/machines" && cp -R machines/signoff "$scratch/machines/signoff"
cd "$scratch"

say "signoff: answer in a sentence, then sign off with \"Aye!\"; its model is local:smollm2-135m"
"$machine" show signoff

say "The teacher: a scripted model answers every case and signs off (a run of each case, graded)"
timed "$machine" suite signoff --harness scripted --script machines/signoff/script.json --model teacher \
  --budget none

say "Plan: what training will do, worked out from the teacher's runs before anything runs (a dry run spends and writes nothing)"
"$machine" train signoff --any-model --dry-run

say "Train: the teacher's runs distilled into local:smollm2-135m (LoRA, on this CPU) on that plan, with no hyperparameter given, then the checkpoint and the base measured on the held-out cases, which the teacher never saw"
timed "$machine" train signoff --any-model --trials 1 --budget none

say "Commit: the checkpoint becomes live only because it passed the gate"
"$machine" commit signoff
cat machines/signoff/model.json
"$machine" versions signoff
