/**
 * What the verbs and CUDA bindings share: {@link io.rdma4j.nativesupport.NativeResource}, the
 * base of every object that owns a native handle (a child keeps its parents alive, as in
 * rust-ibverbs), {@link io.rdma4j.nativesupport.Checks} for argument checks whose messages name
 * the argument, and {@link io.rdma4j.nativesupport.LibC}, the one binding of the libc calls
 * rdma4j makes itself.
 */
package io.rdma4j.nativesupport;
