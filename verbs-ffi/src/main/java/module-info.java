/**
 * The libibverbs/librdmacm binding: the safe verbs layer {@code io.rdma4j.verbs}. The generated
 * bindings ({@code io.rdma4j.verbs.ffi}) are not exported. Needs
 * {@code --enable-native-access=io.rdma4j.verbs} (or ALL-UNNAMED on the class path).
 *
 * <p>A verbs object may be closed from any thread. A close while another thread is inside a
 * native call with the object (posting to a queue pair, polling a completion queue, creating an
 * object in a protection domain or on a device) is refused with an {@code IllegalStateException}
 * that says so, and the object stays open; a call that starts after the close fails with a
 * {@code ResourceClosedException}. Neither reaches a destroyed object.
 */
module io.rdma4j.verbs {
    requires transitive io.rdma4j.nativesupport;

    exports io.rdma4j.verbs;
}
