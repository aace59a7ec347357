package io.rdma4j.collectives.reduce;

import io.rdma4j.collectives.ReduceOp;

/**
 * The element-wise operators over heap arrays, {@code xs[i] = xs[i] OP ys[i]} for the first
 * {@code m} elements, for the kernels that work in {@link Blocks}. One straight counted loop per
 * operator and type: an operator switch inside a loop keeps C2 from vectorizing it, and C1
 * compiles array loops to plain loads and stores where per-element segment access stays a chain
 * of calls. The semantics are {@link Reducer}'s (wrapping integers, {@link Math#min(float, float)}).
 */
final class ArrayLoops {
    private ArrayLoops() {
    }

    /** {@code xs[i] = xs[i] OP ys[i]} for the first {@code m} elements. */
    static void combine(ReduceOp op, float[] xs, float[] ys, int m) {
        switch (op) {
            case SUM, AVG -> sum(xs, ys, m);
            case PROD -> prod(xs, ys, m);
            case MIN -> min(xs, ys, m);
            case MAX -> max(xs, ys, m);
        }
    }

    static void combine(ReduceOp op, double[] xs, double[] ys, int m) {
        switch (op) {
            case SUM, AVG -> sum(xs, ys, m);
            case PROD -> prod(xs, ys, m);
            case MIN -> min(xs, ys, m);
            case MAX -> max(xs, ys, m);
        }
    }

    static void combine(ReduceOp op, int[] xs, int[] ys, int m) {
        switch (op) {
            case SUM, AVG -> sum(xs, ys, m);
            case PROD -> prod(xs, ys, m);
            case MIN -> min(xs, ys, m);
            case MAX -> max(xs, ys, m);
        }
    }

    static void combine(ReduceOp op, long[] xs, long[] ys, int m) {
        switch (op) {
            case SUM, AVG -> sum(xs, ys, m);
            case PROD -> prod(xs, ys, m);
            case MIN -> min(xs, ys, m);
            case MAX -> max(xs, ys, m);
        }
    }

    private static void sum(float[] xs, float[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = xs[i];
            float y = ys[i];
            xs[i] = x + y;
        }
    }

    private static void prod(float[] xs, float[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = xs[i];
            float y = ys[i];
            xs[i] = x * y;
        }
    }

    private static void min(float[] xs, float[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = xs[i];
            float y = ys[i];
            xs[i] = Math.min(x, y);
        }
    }

    private static void max(float[] xs, float[] ys, int m) {
        for (int i = 0; i < m; i++) {
            float x = xs[i];
            float y = ys[i];
            xs[i] = Math.max(x, y);
        }
    }

    private static void sum(double[] xs, double[] ys, int m) {
        for (int i = 0; i < m; i++) {
            double x = xs[i];
            double y = ys[i];
            xs[i] = x + y;
        }
    }

    private static void prod(double[] xs, double[] ys, int m) {
        for (int i = 0; i < m; i++) {
            double x = xs[i];
            double y = ys[i];
            xs[i] = x * y;
        }
    }

    private static void min(double[] xs, double[] ys, int m) {
        for (int i = 0; i < m; i++) {
            double x = xs[i];
            double y = ys[i];
            xs[i] = Math.min(x, y);
        }
    }

    private static void max(double[] xs, double[] ys, int m) {
        for (int i = 0; i < m; i++) {
            double x = xs[i];
            double y = ys[i];
            xs[i] = Math.max(x, y);
        }
    }

    private static void sum(int[] xs, int[] ys, int m) {
        for (int i = 0; i < m; i++) {
            int x = xs[i];
            int y = ys[i];
            xs[i] = x + y;
        }
    }

    private static void prod(int[] xs, int[] ys, int m) {
        for (int i = 0; i < m; i++) {
            int x = xs[i];
            int y = ys[i];
            xs[i] = x * y;
        }
    }

    private static void min(int[] xs, int[] ys, int m) {
        for (int i = 0; i < m; i++) {
            int x = xs[i];
            int y = ys[i];
            xs[i] = Math.min(x, y);
        }
    }

    private static void max(int[] xs, int[] ys, int m) {
        for (int i = 0; i < m; i++) {
            int x = xs[i];
            int y = ys[i];
            xs[i] = Math.max(x, y);
        }
    }

    private static void sum(long[] xs, long[] ys, int m) {
        for (int i = 0; i < m; i++) {
            long x = xs[i];
            long y = ys[i];
            xs[i] = x + y;
        }
    }

    private static void prod(long[] xs, long[] ys, int m) {
        for (int i = 0; i < m; i++) {
            long x = xs[i];
            long y = ys[i];
            xs[i] = x * y;
        }
    }

    private static void min(long[] xs, long[] ys, int m) {
        for (int i = 0; i < m; i++) {
            long x = xs[i];
            long y = ys[i];
            xs[i] = Math.min(x, y);
        }
    }

    private static void max(long[] xs, long[] ys, int m) {
        for (int i = 0; i < m; i++) {
            long x = xs[i];
            long y = ys[i];
            xs[i] = Math.max(x, y);
        }
    }

    /** {@code xs[i] = xs[i] / n}: AVG's one division (fp32 arithmetic, as the segment kernels). */
    static void divide(float[] xs, int n, int m) {
        float div = n;
        for (int i = 0; i < m; i++) {
            xs[i] = xs[i] / div;
        }
    }

    static void divide(double[] xs, int n, int m) {
        double div = n;
        for (int i = 0; i < m; i++) {
            xs[i] = xs[i] / div;
        }
    }

    /** Truncating integer division, as the segment kernels. */
    static void divide(int[] xs, int n, int m) {
        for (int i = 0; i < m; i++) {
            xs[i] = xs[i] / n;
        }
    }

    static void divide(long[] xs, int n, int m) {
        for (int i = 0; i < m; i++) {
            xs[i] = xs[i] / n;
        }
    }
}
