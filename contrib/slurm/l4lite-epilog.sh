#!/usr/bin/env bash
# l4lite epilog for Slurm: diagnose a job that failed or timed out, as soon as it ends.
#
# Install it as EpilogSlurmctld (runs once per job, on the controller, which must see the job's output files)
# or call it from your existing epilog. It reads the job from Slurm's epilog environment and `scontrol`, runs
# `l4lite analyze` on the job's output, its extra log folders and the nodes' syslog files, writes
# l4lite-<jobid>.json and .html next to the job's output, records the job in the history store and posts the
# verdict to a webhook. It always exits 0: an epilog that fails can drain nodes.
#
# Environment (all optional except what Slurm sets):
#   SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_JOB_NAME       set by Slurm
#   SLURM_JOB_EXIT_CODE2 ("exit:signal") or SLURM_JOB_EXIT_CODE (wait status)   set by Slurm
#   SLURM_JOB_STDOUT, SLURM_JOB_STDERR    the job's output files (else StdOut=/StdErr= of `scontrol show job`)
#   L4LITE                 the l4lite command (default: l4lite)
#   L4LITE_STATES          job states to analyse (default: FAILED TIMEOUT NODE_FAIL OUT_OF_MEMORY DEADLINE)
#   L4LITE_LOGS            more logs of the job, space separated; %j is the job id (e.g. /lustre/runs/%j/logs)
#   L4LITE_SYSLOG          a node's syslog file; %n is the node name (e.g. /var/log/remote/%n/kern.log)
#   L4LITE_OUTPUT_DIR      where the JSON and HTML go (default: the folder of the job's output)
#   L4LITE_STORE           history store file (default: l4lite's own default)
#   L4LITE_WEBHOOK         a Slack-compatible incoming webhook URL
#   L4LITE_TIMEOUT         seconds the analysis may take (default 900)
#   L4LITE_EPILOG_LOG      where this script writes what it did (default: stderr)

set -u
if [[ -n "${L4LITE_EPILOG_LOG:-}" ]]; then
  exec 2>>"$L4LITE_EPILOG_LOG"
fi
say() { printf 'l4lite-epilog: job %s: %s\n' "${SLURM_JOB_ID:-?}" "$*" >&2; }

job="${SLURM_JOB_ID:-}"
if [[ -z "$job" ]]; then
  say "SLURM_JOB_ID is not set; nothing to do"
  exit 0
fi
read -r -a l4lite <<<"${L4LITE:-l4lite}"

info="$(scontrol show job "$job" 2>/dev/null || true)"
field() { # the value of KEY= in `scontrol show job` output (values have no spaces, except paths with none)
  grep -o "\(^\|[[:space:]]\)$1=[^[:space:]]*" <<<"$info" | head -n 1 | sed "s/^[[:space:]]*$1=//"
}
state="$(field JobState)"
if [[ -n "${SLURM_JOB_EXIT_CODE2:-}" ]]; then
  exit_code="${SLURM_JOB_EXIT_CODE2%%:*}"
  signal="${SLURM_JOB_EXIT_CODE2##*:}"
elif [[ -n "${SLURM_JOB_EXIT_CODE:-}" ]]; then
  exit_code=$(( SLURM_JOB_EXIT_CODE >> 8 ))
  signal=$(( SLURM_JOB_EXIT_CODE & 127 ))
else
  code="$(field ExitCode)"
  exit_code="${code%%:*}"
  signal="${code##*:}"
fi
exit_code="${exit_code:-0}"
signal="${signal:-0}"

wanted=" ${L4LITE_STATES:-FAILED TIMEOUT NODE_FAIL OUT_OF_MEMORY DEADLINE} "
if [[ -n "$state" ]]; then
  if [[ "$wanted" != *" $state "* ]]; then
    say "state $state (exit $exit_code:$signal): not analysed"
    exit 0
  fi
elif [[ "$exit_code" == 0 && "$signal" == 0 ]]; then
  say "exit 0:0 and no job state known: not analysed"
  exit 0
fi

stdout="${SLURM_JOB_STDOUT:-$(field StdOut)}"
stderr="${SLURM_JOB_STDERR:-$(field StdErr)}"
inputs=()
for f in "$stdout" "$stderr"; do
  if [[ -n "$f" && -f "$f" ]] && [[ ${#inputs[@]} -eq 0 || "${inputs[0]}" != "$f" ]]; then
    inputs+=("$f")
  fi
done
for pattern in ${L4LITE_LOGS:-}; do
  path="${pattern//%j/$job}"
  [[ -e "$path" ]] && inputs+=("$path")
done
if [[ -n "${L4LITE_SYSLOG:-}" && -n "${SLURM_JOB_NODELIST:-}" ]]; then
  while read -r node; do
    path="${L4LITE_SYSLOG//%n/$node}"
    [[ -n "$node" && -f "$path" ]] && inputs+=("$path")
  done < <(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null)
fi
if [[ ${#inputs[@]} -eq 0 ]]; then
  say "state ${state:-?} (exit $exit_code:$signal) but no log file found (StdOut=${stdout:-?})"
  exit 0
fi

out_dir="${L4LITE_OUTPUT_DIR:-$(dirname "${stdout:-${inputs[0]}}")}"
base="$out_dir/l4lite-$job"
name="${SLURM_JOB_NAME:-$(field JobName)}"
args=(analyze "${inputs[@]}" --quiet --json "$base.json" --html "$base.html")
[[ -n "${L4LITE_STORE:-}" ]] && args+=(--store "$L4LITE_STORE")
if [[ -n "${L4LITE_WEBHOOK:-}" ]]; then
  args+=(--webhook "$L4LITE_WEBHOOK" --webhook-title "Slurm job $job${name:+ ($name)} ${state:-exit $exit_code}:")
fi

timeout "${L4LITE_TIMEOUT:-900}" "${l4lite[@]}" "${args[@]}"
rc=$?
case $rc in
  0) say "state ${state:-?}: no incident found in ${#inputs[@]} input(s); report $base.html" ;;
  1) say "state ${state:-?}: incident; report $base.html" ;;
  124) say "analysis took longer than ${L4LITE_TIMEOUT:-900}s and was stopped" ;;
  *) say "l4lite analyze failed (exit $rc)" ;;
esac
exit 0
