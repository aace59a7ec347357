package io.rdma4j.transport.conformance;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * The conformance suite on the verbs provider. Needs a verbs device, so it runs in the Soft-RoCE
 * guest (scripts/softroce-test); every rank uses the first device, rxe0, so the two QPs of a pair
 * meet through rxe's loopback on one device.
 */
@Tag(SoftRoce.TAG)
class VerbsConformanceTest extends TransportConformanceTest {
    @BeforeAll
    static void requireDevice() {
        SoftRoce.requireDeviceOrSkip();
    }

    @Override
    protected TransportConfig.Provider provider() {
        return TransportConfig.Provider.VERBS;
    }
}
