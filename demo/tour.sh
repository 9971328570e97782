#!/usr/bin/env bash
# A short guided tour of machine, with harnesses that need no model and no key.
set -euo pipefail
cd "$(dirname "$0")/.."
machine=".venv/bin/machine"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "The example machines in machines/"
$machine list

say "One machine up close: its criteria, their graders, its tool"
$machine show red

say "One run, graded: the scripted harness replays a model that calls red_mentioned"
$machine run red "Roses are red, violets are blue." --harness scripted --script machines/red/script.json --eval

say "The red suite, replayed by the scripted harness: every case should pass"
$machine suite red --harness scripted --script machines/red/script.json --trials 2

say "The same suite on the echo harness, which never calls a tool: the cases that mention red fail"
$machine suite red --harness echo -v

say "A conversation: chatbot answers its simulated user (persona), both sides replayed by the script"
$machine converse chatbot compound-interest --harness scripted --script machines/chatbot/script.json

say "chatbot's suite of scenarios: with no model key here its judged criteria are UNSCORED, never 0"
$machine suite chatbot --harness scripted --script machines/chatbot/script.json

say "coder in its sandbox: the script writes a program and runs it, isolated by bubblewrap"
$machine run coder "Write a program that prints every prime number below 50, one per line." \
  --harness scripted --script machines/coder/script.json --eval

say "coder's suite: every program really written and run; does_task waits for a model judge"
$machine suite coder --harness scripted --script machines/coder/script.json

# optimize writes the machine's files, so it works on a copy of dates in a workspace of its own, made a
# git repository so the kept rewrite shows up as an uncommitted change.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/machines" && cp -R machines/dates "$scratch/machines/dates"
printf '.machine/\n__pycache__/\n' > "$scratch/.gitignore"
$machine versions dates --workspace "$scratch" > /dev/null
has_git() { command -v git > /dev/null 2>&1; }
if has_git; then
  git -C "$scratch" init -q
  git -C "$scratch" add -A
  git -C "$scratch" -c user.name=tour -c user.email=tour@localhost -c commit.gpgsign=false commit -q -m "dates v1"
fi

say "optimize: the optimizer machine rewrites dates' instructions, kept only if measured better"
$machine optimize dates --workspace "$scratch" --harness scripted --script machines/dates/script.json \
  --candidates 1 --trials 2

if has_git; then
  say "The kept rewrite is written to instructions.md and left uncommitted in git"
  git -C "$scratch" status --short
fi

say "commit makes it the live version (revert would take it back), on the scripted harness it was measured on"
$machine commit dates --workspace "$scratch"
$machine versions dates --workspace "$scratch"

# specialize writes a new machine, so it works on copies of dev (and coder, whose steps dev reads) in the
# same scratch workspace.
cp -R machines/dev machines/coder "$scratch/machines/"

say "dev's suite in the scratch workspace: its stored runs are what the author's checks are tried on"
$machine suite dev --workspace "$scratch" --harness scripted --script machines/dev/script.json

say "specialize: the author machine writes dev/edge, graded with hidden tests, and cases that must hold up"
$machine specialize dev --workspace "$scratch" --focus "edge cases of small helpers" --slug edge --cases 2 \
  --harness scripted --script machines/dev/author.json

say "Its code was vetted in a sandbox, but nothing imports code a model wrote until you have read it"
$machine list --workspace "$scratch"
$machine trust dev/edge --workspace "$scratch" --yes

say "Trusted, the child is an ordinary machine: what it inherits and what it adds"
$machine tree dev --workspace "$scratch"

say "The newest stored runs (in .machine/store.db)"
$machine runs red --limit 5

say "Next: 'machine run chatbot' to talk to a machine, 'make test' to run the test suite"
