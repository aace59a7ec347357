package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.Mtu;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfParamsTest {

    private static PerfParams parse(String... args) {
        return PerfParams.parse(args);
    }

    /** One size given as a list moderates completions as the same size given with -s does. */
    @Test
    void aOneSizeListModeratesCompletionsAsItsSizeDoes() {
        assertEquals(parse("write_bw", "-s", "4096").cqMod, parse("write_bw", "--sizes=4096").cqMod);
        assertEquals(parse("write_bw", "-s", "65536").cqMod, parse("write_bw", "--sizes=65536").cqMod);
        assertEquals(1, parse("write_bw", "--sizes=65536").cqMod);
    }

    @Test
    void perftestDefaultsPerTest() {
        PerfParams bw = parse("write_bw", "-d", "rxe0");
        assertTrue(bw.isServer());
        assertEquals("rxe0", bw.device);
        assertArrayEquals(new int[]{65536}, bw.sizes);
        assertEquals(5000, bw.iters);
        assertEquals(128, bw.txDepth);
        assertEquals(1, bw.cqMod, "above 8 KiB perftest turns CQ moderation off unless -Q is given");
        assertEquals(1, bw.postList);
        assertEquals(18515, bw.tcpPort);
        assertEquals(128, bw.warmupRound(65536), "bw warm-up rounds write about 8 MiB");
        assertEquals(32, bw.warmupRound(1 << 20));
        assertEquals(5000, bw.warmupRound(64));
        assertEquals(30, bw.warmupRounds);

        PerfParams lat = parse("send_lat", "198.18.0.1");
        assertFalse(lat.isServer());
        assertEquals("198.18.0.1", lat.serverHost);
        assertArrayEquals(new int[]{2}, lat.sizes);
        assertEquals(1000, lat.iters);
        assertEquals(1, lat.txDepth);
        assertEquals(512, lat.rxDepth);
        assertEquals(1, lat.cqMod, "CQ moderation never exceeds the TX depth");
        assertEquals(5000, lat.warmupRound(2));
        assertEquals(0, parse("send_lat", "--warmup=0").warmupRound(2), "--warmup=0 turns the warm-up off");
        assertEquals(7, parse("send_lat", "--warmup", "7", "--warmup-rounds=3").warmupRound(2));
        assertEquals(3, parse("send_lat", "--warmup-rounds=3").warmupRounds);
        assertEquals(236, lat.inlineSize("mlx5_0"));
        assertEquals(0, lat.inlineSize("rxe0"), "perftest does not know Soft-RoCE and turns inline off");
        assertEquals(220, parse("write_lat").inlineSize("mlx5_0"));
        assertEquals(0, bw.inlineSize("mlx5_0"));
    }

    @Test
    void smallMessagesKeepTheDefaultModeration() {
        assertEquals(100, parse("write_bw", "-s", "4096").cqMod);
        assertEquals(100, parse("write_bw", "-a").cqMod, "-a keeps moderation for every size, as perftest");
        assertEquals(16, parse("write_bw", "-s", "1048576", "-Q", "16").cqMod, "an explicit -Q is kept");
    }

    @Test
    void shortLongAndAttachedValueForms() {
        PerfParams p = parse("write_bw", "-s4096", "--iters=2000", "--tx-depth", "64", "-Q", "8", "-x", "1",
                "-m", "2048", "-p", "19000", "-F", "-i", "1", "--oob-timeout=30", "server");
        assertArrayEquals(new int[]{4096}, p.sizes);
        assertEquals(2000, p.iters);
        assertEquals(64, p.txDepth);
        assertEquals(8, p.cqMod);
        assertEquals(1, p.gidIndex);
        assertEquals(Mtu.MTU_2048, p.mtu);
        assertEquals(19000, p.tcpPort);
        assertEquals(30, p.oobTimeoutSeconds);
        assertEquals("server", p.serverHost);
        assertNull(parse("write_bw").mtu, "default: the port's active MTU");
        assertEquals(-1, parse("write_bw").gidIndex, "default: the port's preferred GID");
    }

    @Test
    void allSizesAreTwoToTwoToTheTwentyThird() {
        int[] sizes = parse("write_lat", "-a").sizes;
        assertEquals(23, sizes.length);
        assertEquals(2, sizes[0]);
        assertEquals(PerfParams.MAX_SIZE, sizes[22]);
    }

    @Test
    void sizeListRunsSeveralSizesInOneProcess() {
        PerfParams p = parse("write_lat", "--sizes=2,64,4096");
        assertArrayEquals(new int[]{2, 64, 4096}, p.sizes);
        assertEquals(4096, p.maxSize());
        assertEquals(100, parse("write_bw", "--sizes", "64,65536").cqMod, "a list keeps moderation, like -a");
        assertThrows(IllegalArgumentException.class, () -> parse("write_lat", "--sizes=64,2"));
        assertThrows(IllegalArgumentException.class, () -> parse("write_lat", "--sizes=64", "-s", "2"));
        assertThrows(IllegalArgumentException.class, () -> parse("write_lat", "-a", "-s", "2"));
    }

    @Test
    void postListSetsTheModerationAndMustFit() {
        PerfParams p = parse("write_bw", "-s", "64", "-l", "16", "-n", "1600");
        assertEquals(16, p.postList);
        assertEquals(16, p.cqMod, "without -Q the post list size is the moderation");
        assertEquals(4, parse("write_bw", "-l", "16", "-Q", "4", "-n", "1600").cqMod);
        assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-l", "16", "-Q", "5", "-n", "1600"));
        assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-l", "16", "-n", "1000"));
        assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-l", "32", "-t", "16", "-n", "3200"));
        IllegalArgumentException lat = assertThrows(IllegalArgumentException.class,
                () -> parse("send_lat", "-l", "4", "-n", "1000"));
        assertTrue(lat.getMessage().contains("bandwidth tests only"), lat.getMessage());
    }

    @Test
    void depthsShrinkToTheIterationCount() {
        PerfParams p = parse("write_bw", "-n", "50");
        assertEquals(50, p.txDepth);
        assertEquals(20, parse("send_lat", "-n", "20").rxDepth);
        assertTrue(parse("write_bw", "-n", "20001").noPeak, "perftest skips the peak above 20000 iterations");
    }

    @Test
    void badInputIsNamed() {
        assertThrows(IllegalArgumentException.class, () -> parse());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("read_bw")).getMessage()
                .contains("read_bw"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-s", "0")).getMessage()
                .contains("-s"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-s", "8388609"))
                .getMessage().contains("8388608"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-n", "4")).getMessage()
                .contains("[5,"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-m", "1500")).getMessage()
                .contains("MTU"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "-s")).getMessage()
                .contains("needs a value"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "--bogus")).getMessage()
                .contains("bogus"));
        assertThrows(IllegalArgumentException.class, () -> parse("write_bw", "a", "b"));
        assertTrue(parse("--help").help);
    }

    @Test
    void bothSidesMustAgreeOnWhatTheyMeasure() {
        assertEquals(parse("send_lat", "-s", "64").fingerprint(), parse("send_lat", "-s", "64", "10.0.0.1").fingerprint());
        assertFalse(parse("send_lat", "-s", "64").fingerprint().equals(parse("send_lat", "-s", "128").fingerprint()));
        assertFalse(parse("send_lat").fingerprint().equals(parse("write_lat").fingerprint()));
    }
}
