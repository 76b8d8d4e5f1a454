# shellcheck shell=bash
# Process supervision by pid file, sourced by tools/e2e/cluster.sh and tools/fleet/fleet.sh.
#
# The caller sets, before the first call:
#   PROCS_DIR     state folder: logs go to $PROCS_DIR/logs/NAME.log, pids to
#                 $PROCS_DIR/pids/NAME.pid, the start order to $PROCS_DIR/pids/order
#   PROCS_TAG     the prefix of this library's log lines (e.g. "cluster", "fleet")
#   PROCS_PREFIX  (array, may be empty) what every started command runs under, e.g.
#                 (nsenter -t PID -n --): it must exec the command, so that the recorded
#                 pid is the process itself and a TERM reaches it
#   PROCS_STOP_SECS  how long a TERM has before a KILL (default 15)
#
#   procs_start NAME CMD...        start CMD in the background, log and pid file recorded
#   procs_wait NAME SECS PROBE...  retry PROBE until it passes; fail (naming NAME, with the
#                                  tail of its log) on timeout or when NAME has died
#   procs_stop NAME                stop NAME by its pid file: TERM, then KILL
#   procs_stop_all                 stop everything started, in reverse start order
#   procs_status                   which recorded processes are alive
#   procs_pid NAME / procs_alive PID
[[ -v PROCS_PREFIX ]] || PROCS_PREFIX=()
PROCS_TAIL_LINES="${PROCS_TAIL_LINES:-20}"

procs_log() { printf '%s %s: %s\n' "$(date +%T)" "${PROCS_TAG:-procs}" "$*" >&2; }

procs_die() {
    procs_log "ERROR: $*"
    exit 1
}

procs_alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

procs_pid() { cat "$PROCS_DIR/pids/$1.pid" 2>/dev/null || true; }

# procs_start NAME CMD...: start CMD (under PROCS_PREFIX) in the background, stdin closed,
# output to its log; record its pid and its place in the start order.
procs_start() {
    local name="$1"
    shift
    mkdir -p "$PROCS_DIR/logs" "$PROCS_DIR/pids"
    "${PROCS_PREFIX[@]}" "$@" </dev/null >"$PROCS_DIR/logs/$name.log" 2>&1 &
    echo $! >"$PROCS_DIR/pids/$name.pid"
    echo "$name" >>"$PROCS_DIR/pids/order"
    procs_log "started $name (pid $!)"
}

# procs_tail NAME: the last lines of NAME's log, to stderr.
procs_tail() {
    local f="$PROCS_DIR/logs/$1.log"
    [[ -f "$f" ]] || return 0
    echo "---- tail of $f" >&2
    tail -n "$PROCS_TAIL_LINES" "$f" >&2
}

# procs_wait NAME SECS PROBE...: retry PROBE every half second until it passes. Fails at
# once when the process NAME started has exited, else after SECS; either way naming the
# process and showing its log's tail.
procs_wait() {
    local name="$1" secs="$2" t0=$SECONDS pid
    shift 2
    pid="$(procs_pid "$name")"
    until "$@" >/dev/null 2>&1; do
        if [[ -n "$pid" ]] && ! procs_alive "$pid"; then
            procs_tail "$name"
            procs_die "$name (pid $pid) exited before it was up (log: $PROCS_DIR/logs/$name.log)"
        fi
        if ((SECONDS - t0 >= secs)); then
            procs_tail "$name"
            procs_die "$name not up after ${secs}s (log: $PROCS_DIR/logs/$name.log)"
        fi
        sleep 0.5
    done
    procs_log "$name up in $((SECONDS - t0)) s"
}

# procs_stop_pid NAME PID: TERM, wait up to PROCS_STOP_SECS, then KILL. Says so if killed.
procs_stop_pid() {
    local name="$1" pid="$2" i
    procs_alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < ${PROCS_STOP_SECS:-15} * 10; i++)); do
        procs_alive "$pid" || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    procs_log "killed $name (pid $pid): still running ${PROCS_STOP_SECS:-15} s after TERM"
}

# procs_stop NAME: stop NAME by its pid file and forget it.
procs_stop() {
    local pid
    pid="$(procs_pid "$1")"
    [[ -n "$pid" ]] && procs_stop_pid "$1" "$pid"
    rm -f "$PROCS_DIR/pids/$1.pid"
}

# procs_stop_all: stop every recorded process, last started first.
procs_stop_all() {
    [[ -f "$PROCS_DIR/pids/order" ]] || return 0
    local name n=0
    for name in $(tac "$PROCS_DIR/pids/order"); do
        [[ -f "$PROCS_DIR/pids/$name.pid" ]] || continue
        procs_stop "$name"
        n=$((n + 1))
    done
    rm -f "$PROCS_DIR/pids/order"
    procs_log "stopped $n processes"
}

procs_status() {
    local name pid
    if [[ ! -f "$PROCS_DIR/pids/order" ]]; then
        echo "not running"
        return 0
    fi
    for name in $(cat "$PROCS_DIR/pids/order"); do
        pid="$(procs_pid "$name")"
        [[ -n "$pid" ]] || continue
        if procs_alive "$pid"; then echo "$name: running (pid $pid)"; else echo "$name: dead (pid $pid)"; fi
    done
}
