/** The CUDA driver API binding: {@code io.rdma4j.cuda}; the generated bindings are not exported. */
module io.rdma4j.cuda {
    requires transitive io.rdma4j.nativesupport;

    exports io.rdma4j.cuda;
}
