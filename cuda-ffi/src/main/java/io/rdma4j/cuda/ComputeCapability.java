package io.rdma4j.cuda;

/** A device's compute capability, e.g. 9.0 for Hopper (sm_90). */
public record ComputeCapability(int major, int minor) implements Comparable<ComputeCapability> {

    public boolean atLeast(int major, int minor) {
        return this.major > major || this.major == major && this.minor >= minor;
    }

    @Override
    public int compareTo(ComputeCapability o) {
        return major != o.major ? Integer.compare(major, o.major) : Integer.compare(minor, o.minor);
    }

    @Override
    public String toString() {
        return major + "." + minor;
    }
}
