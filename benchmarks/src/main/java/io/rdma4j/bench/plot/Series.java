package io.rdma4j.bench.plot;

import java.util.List;

/** One line of a chart: a name, its (x, y) points, a colour index and whether it is dashed (the peer). */
public record Series(String name, List<double[]> points, int colour, boolean dashed) {
}
