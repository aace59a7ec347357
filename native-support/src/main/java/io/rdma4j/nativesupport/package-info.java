/**
 * {@link io.rdma4j.nativesupport.NativeResource}, the base of every verbs and CUDA object that
 * owns a native handle: a child keeps its parents alive, as in rust-ibverbs. The argument checks
 * and the libc binding that the bindings share live in {@code io.rdma4j.nativesupport.internal},
 * which the module exports only to rdma4j's own modules.
 */
package io.rdma4j.nativesupport;
