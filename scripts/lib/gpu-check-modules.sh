# Sourced by scripts/gpu-check (from a checkout) and scripts/make-jlink-runtime: the modules whose
# classes gpu-check runs (GpuCheck, GpuAllReduceCheck and the library layers under them), in
# dependency order. A module missing here fails both: the bundle's jdeps, the checkout's class path.
gpu_check_modules=(native-support verbs-ffi cuda-ffi transport collectives gpu tools benchmarks)
