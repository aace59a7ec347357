/** Allreduce of CUDA device buffers and GPUDirect RDMA detection ({@code io.rdma4j.gpu}). */
module io.rdma4j.gpu {
    requires transitive io.rdma4j.collectives;
    requires transitive io.rdma4j.cuda;

    exports io.rdma4j.gpu;
}
