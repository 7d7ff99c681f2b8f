#!/usr/bin/env bash
# Compile ClickJob.java against the Flink jars of the `apache-flink` package, run it on a
# local MiniCluster for SECONDS with `mace collect flink` beside it, both writing the run
# folder LANDING/RUN_ID (counters into samples/, the job's FileSink into outputs/).
#
#   examples/java-filesink/run.sh LANDING [RUN_ID] [SECONDS]
#
# Then: mace ingest LANDING --db mace.duckdb && mace report --db mace.duckdb --json
# Environment: FLINK_LIB (default: the PyFlink package's lib/ in .venv-flink), MACE
# (default: .venv/bin/mace), REST_PORT (default 8081), JOB_ARGS (more ClickJob options).
set -euo pipefail

landing=${1:?usage: run.sh LANDING [RUN_ID] [SECONDS]}
run_id=${2:-javarun}
seconds=${3:-60}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
flink_lib=${FLINK_LIB:-$(ls -d "$repo"/.venv-flink/lib/python3*/site-packages/pyflink/lib | head -n 1)}
mace=${MACE:-$repo/.venv/bin/mace}
port=${REST_PORT:-8081}
build=${BUILD:-$repo/build/java-filesink}

mkdir -p "$build/classes" "$landing/$run_id/outputs"
javac -cp "$flink_lib/*" -d "$build/classes" "$here/ClickJob.java"

# the job's log (Log4j's default: errors only) goes to the build folder
java -cp "$build/classes:$flink_lib/*" ClickJob \
    --outputs "$landing/$run_id/outputs" --rest-port "$port" --seconds "$seconds" \
    ${JOB_ARGS:-} >"$build/job.log" 2>&1 &
job=$!
trap 'kill "$job" 2>/dev/null || true' EXIT

# wait for the job to run (the MiniCluster takes seconds to start), then collect: the
# collector follows the job and stops when it ends
for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/jobs/overview" | grep -q '"state":"RUNNING"' && break
    kill -0 "$job" 2>/dev/null || { echo "the job failed: see $build/job.log" >&2; exit 1; }
    sleep 0.5
done
# (the MiniCluster leaves with the finished job: the collector stops 5 s after)
"$mace" collect flink --rest "http://127.0.0.1:$port" --out "$landing" --run-id "$run_id" \
    --give-up 5
wait "$job" || { echo "the job failed: see $build/job.log" >&2; exit 1; }
trap - EXIT
echo "wrote $landing/$run_id: $(ls "$landing/$run_id/samples" | wc -l) samples files," \
    "$(ls "$landing/$run_id/outputs" | wc -l) outputs files"
