package io.rdma4j.cuda;

import java.nio.file.Path;
import java.util.Optional;

/**
 * What {@link Cuda#probe()} found. {@code explanation} is a sentence a user can act on (what is
 * missing and how to fix it); for {@link CudaStatus#AVAILABLE} it summarizes the driver.
 *
 * @param library       the libcuda that was loaded, if any
 * @param driverVersion cuDriverGetVersion (e.g. 12040 for 12.4), 0 when unknown
 * @param deviceCount   devices the driver lists, 0 unless AVAILABLE
 * @param result        the CUresult of the failing call (cuInit), or 0
 */
public record CudaProbe(CudaStatus status, String explanation, Optional<Path> library, int driverVersion,
                        int deviceCount, int result) {

    public boolean available() {
        return status == CudaStatus.AVAILABLE;
    }

    /** "12.4" for 12040; "unknown" for 0. */
    public String driverVersionString() {
        return Cuda.versionString(driverVersion);
    }
}
