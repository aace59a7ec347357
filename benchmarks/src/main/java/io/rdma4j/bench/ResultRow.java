package io.rdma4j.bench;

/** One line of the results: a size, with its out-of-place and in-place measurements (null when not run). */
public record ResultRow(long bytes, long count, String type, String op, int root, Measurement outOfPlace,
                        Measurement inPlace, String algorithm) {
}
