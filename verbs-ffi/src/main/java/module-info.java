/**
 * The libibverbs/librdmacm binding: the safe verbs layer {@code io.rdma4j.verbs}. The generated
 * bindings ({@code io.rdma4j.verbs.ffi}) are not exported. Needs
 * {@code --enable-native-access=io.rdma4j.verbs} (or ALL-UNNAMED on the class path).
 */
module io.rdma4j.verbs {
    requires transitive io.rdma4j.nativesupport;

    exports io.rdma4j.verbs;
}
