/**
 * The libibverbs/librdmacm binding: the safe verbs layer {@code io.rdma4j.verbs}. The generated
 * bindings ({@code io.rdma4j.verbs.ffi}) are not exported. Needs
 * {@code --enable-native-access=io.rdma4j.verbs} (or ALL-UNNAMED on the class path).
 *
 * <p>A verbs object may be closed from any thread. A close while another thread is inside a
 * native call with the object (posting to a queue pair, polling a completion queue, creating an
 * object in a protection domain or on a device) is refused with an {@code IllegalStateException}
 * that says so, and the object stays open; a close of a completion queue or channel while an
 * object is created on it is carried out once the creation returned. A call that starts after
 * the close fails in Java: with a {@code ResourceClosedException} naming the object, or, where
 * the close came between the call's check and the native call, the {@code IllegalStateException}
 * of the object's closed handle. None of them reaches a destroyed object. (An address handle
 * closed while a posted UD work request still names it is not guarded: as in C, keep it until
 * the request completed.)
 */
module io.rdma4j.verbs {
    requires transitive io.rdma4j.nativesupport;

    exports io.rdma4j.verbs;
}
