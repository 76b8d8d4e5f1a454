#!/usr/bin/env bash
# One setup step as one line of output: `  setup  <label> ........ 21.4s`.
#
#   step.sh NAME LABEL [--cached-if TEST] -- COMMAND [ARG...]
#       Run COMMAND with its output (stdout and stderr) in $STEP_LOG_DIR/NAME.log. The
#       line ends with the step's duration, or "cached" when the shell test TEST held
#       before COMMAND ran (its result was already there: COMMAND only checks or links).
#   step.sh --cached NAME LABEL
#       Report a step that make found up to date ("cached"), unless NAME ran earlier in
#       this same make invocation ($STEP_RUN) and so has printed its line already.
#
# When COMMAND fails the line ends with FAILED, then the log's path and its last
# $STEP_TAIL lines follow, and the step exits with COMMAND's code. V=1 streams the
# output to the terminal as well (still kept in the log). Everything goes to stderr, so
# that a target's own output (`make render > out.yaml`) stays clean. Pure bash: it runs
# before the virtualenv exists.
set -uo pipefail
exec 1>&2

log_dir="${STEP_LOG_DIR:-build/logs}"
group="${STEP_GROUP:-setup}"
tail_lines="${STEP_TAIL:-30}"
width=40

usage() {
    echo "usage: step.sh NAME LABEL [--cached-if TEST] -- COMMAND [ARG...] | step.sh --cached NAME LABEL" >&2
    exit 2
}

# Print "  setup  LABEL ....... " without a newline; the caller ends the line.
start_line() {
    local dots
    dots="$(printf '%*s' $((width - ${#1} > 2 ? width - ${#1} : 2)) '' | tr ' ' '.')"
    printf '  %-6s %s %s ' "$group" "$1" "$dots"
}

# A path relative to the working directory when it is below it (shorter to read).
shown() { echo "${1#"$PWD"/}"; }

marker() { echo "$log_dir/.$1.run"; }

if [[ "${1:-}" == "--cached" ]]; then
    [[ $# -eq 3 ]] || usage
    if [[ -n "${STEP_RUN:-}" && "$(cat "$(marker "$2")" 2>/dev/null)" == "$STEP_RUN" ]]; then
        exit 0
    fi
    start_line "$3"
    echo "cached"
    exit 0
fi

[[ $# -ge 2 ]] || usage
name="$1" label="$2"
shift 2
cached_if=""
while [[ $# -gt 0 && "$1" != "--" ]]; do
    case "$1" in
        --cached-if) cached_if="${2:?--cached-if needs a test}"; shift 2 ;;
        *) usage ;;
    esac
done
[[ "${1:-}" == "--" && $# -ge 2 ]] || usage
shift

mkdir -p "$log_dir"
log="$log_dir/$name.log"
was_cached=false
if [[ -n "$cached_if" ]] && bash -c "$cached_if" >/dev/null 2>&1; then
    was_cached=true
fi

started="$(date +%s%N)"
if [[ "${V:-}" == 1 ]]; then
    echo "==> $label: $*"
    "$@" 2>&1 | tee "$log"
    code=${PIPESTATUS[0]}
    start_line "$label"
else
    start_line "$label"
    "$@" >"$log" 2>&1 </dev/null
    code=$?
fi
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
elapsed="$((elapsed_ms / 1000)).$((elapsed_ms % 1000 / 100))s"

if [[ $code -ne 0 ]]; then
    echo "FAILED after $elapsed (exit $code)"
    echo "  log: $(shown "$log") (last $tail_lines lines below)"
    tail -n "$tail_lines" "$log" | sed 's/^/    | /'
    exit "$code"
fi
[[ -n "${STEP_RUN:-}" ]] && echo "$STEP_RUN" >"$(marker "$name")"
if $was_cached; then echo "cached"; else echo "$elapsed"; fi
