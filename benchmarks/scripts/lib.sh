# Shared by the benchmark scripts (sourced, not run). Sets: root, target, jdk, results, raw.
# RDMA4J_TARGET picks the build folder (as bin/rdma4j and -Drdma4j.target do); default target.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${RDMA4J_TARGET:-target}
results="$root/benchmarks/results"
raw="$results/raw"

jdk=$(RDMA4J_NEED_JDK_HOME=1 bash "$root/.mvn/check-jdk.sh" 22)
# the launcher that runs the tools (and builds the project first when sources changed)
rdma4j="${RDMA4J_LAUNCHER:-$root/bin/rdma4j}"

# Runs a main class of the benchmarks module on the project's class path (after bin/rdma4j built it).
bench_java() {
  "$jdk/bin/java" --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -Djava.awt.headless=true \
    -cp "$root/benchmarks/$target/classes:$root/benchmarks/$target/lib/*" "$@"
}

# A size as the tools take it (8, 64K, 2M, 1G) in bytes.
to_bytes() {
  case $1 in
    *[kK]) echo $(( ${1%?} << 10 )) ;;
    *[mM]) echo $(( ${1%?} << 20 )) ;;
    *[gG]) echo $(( ${1%?} << 30 )) ;;
    *) echo $(( $1 )) ;;
  esac
}

# Makes sure mpicc/mpirun exist, with the one line that says how to get them.
need_mpi() {
  if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    echo "$(basename "$0"): needs Open MPI's mpicc and mpirun: apt-get install openmpi-bin libopenmpi-dev" >&2
    exit 2
  fi
}

# Compiles benchmarks/c/$1.c into the build folder (when newer) and prints the binary's path
# (with mpicc when it includes mpi.h).
build_c() {
  local src="$root/benchmarks/c/$1.c" bin="$root/benchmarks/$target/c/$1" cc=cc
  mkdir -p "$(dirname "$bin")"
  if grep -q '<mpi.h>' "$src"; then cc=mpicc; fi
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    "$cc" -O2 -Wall -pthread -o "$bin" "$src" >&2
  fi
  echo "$bin"
}

# mpirun as root inside containers, more ranks than cores allowed, no InfiniBand probing noise;
# ranks placed as mpirun places them by default: bound to a core each when they fit, unbound when
# they outnumber the cores (rdma4j's tools bind those round-robin instead, their own default, see
# CoreBinding; Open MPI bound that way, 4 ranks on 2 cores, 8 B-32 KiB: over shared memory 2%
# faster to 17% slower than unbound, over TCP steadier). RDMA4J_BIND=none leaves every rank
# unbound. MPI_BTL picks the byte transfer layers (default: shared memory, loopback, TCP;
# "tcp,self" makes every message between ranks go through TCP).
run_mpi() {
  local np=$1; shift
  local bind=none
  if [ "${RDMA4J_BIND:-core}" = core ] && [ "$np" -le "$(nproc)" ]; then bind=core; fi
  mpirun --allow-run-as-root --oversubscribe --bind-to "$bind" -np "$np" --mca btl "${MPI_BTL:-self,vader,tcp}" "$@"
}

# The first two CPUs this process may run on ("0 1"), or nothing when it may run on one only.
two_cpus() {
  local list parts part lo hi c cpus=()
  list=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status 2>/dev/null)
  IFS=, read -ra parts <<< "$list"
  for part in "${parts[@]}"; do
    lo=${part%-*} hi=${part#*-}
    for ((c = lo; c <= hi && ${#cpus[@]} < 2; c++)); do cpus+=("$c"); done
  done
  if [ ${#cpus[@]} -ge 2 ]; then echo "${cpus[0]} ${cpus[1]}"; fi
}
