package io.rdma4j.collectives.algo;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TreesTest {

    interface Shape {
        int parent(int r);

        int children(int r, int[] out);
    }

    /** Parent and child links agree, there is one root, and every rank hangs below it. */
    private static int checkTree(int n, Shape s, String what) {
        int[] kids = new int[64];
        int roots = 0;
        int root = -1;
        for (int r = 0; r < n; r++) {
            int p = s.parent(r);
            if (p < 0) {
                roots++;
                root = r;
                continue;
            }
            assertTrue(p < n && p != r, what + ": parent of " + r + " is " + p);
            int k = s.children(p, kids);
            boolean listed = false;
            for (int i = 0; i < k; i++) {
                listed |= kids[i] == r;
            }
            assertTrue(listed, what + ": " + p + " does not list its child " + r);
        }
        assertEquals(1, roots, what + ": roots");
        int depthMax = 0;
        for (int r = 0; r < n; r++) {
            int depth = 0;
            for (int v = r; v != root; v = s.parent(v)) {
                assertTrue(++depth <= n, what + ": cycle above " + r);
            }
            depthMax = Math.max(depthMax, depth);
        }
        int total = 0;
        for (int r = 0; r < n; r++) {
            total += s.children(r, kids);
        }
        assertEquals(n - 1, total, what + ": child links");
        return depthMax;
    }

    @Test
    void doubleBinaryTreesAreTreesWithLogDepthAndDisjointInteriors() {
        int[] kids = new int[2];
        for (int n = 1; n <= 70; n++) {
            for (int t = 0; t < 2; t++) {
                int tt = t;
                int nn = n;
                int depth = checkTree(n, new Shape() {
                    public int parent(int r) {
                        return Trees.dtreeParent(tt, r, nn);
                    }

                    public int children(int r, int[] out) {
                        return Trees.dtreeChildren(tt, r, nn, out);
                    }
                }, "dtree" + t + " n=" + n);
                assertTrue(depth <= 2 * (32 - Integer.numberOfLeadingZeros(n)), "depth " + depth + " for n=" + n);
            }
            if (n % 2 == 0) {
                for (int r = 0; r < n; r++) {
                    boolean interior0 = Trees.dtreeChildren(0, r, n, kids) > 0;
                    boolean interior1 = Trees.dtreeChildren(1, r, n, kids) > 0;
                    assertTrue(!(interior0 && interior1), "rank " + r + " interior in both trees, n=" + n);
                }
            }
        }
    }

    @Test
    void binomialAndChainTreesFromEveryRoot() {
        for (int n = 1; n <= 20; n++) {
            for (int root = 0; root < n; root++) {
                int nn = n;
                int rt = root;
                int depth = checkTree(n, new Shape() {
                    public int parent(int r) {
                        return Trees.binomialParent(r, rt, nn);
                    }

                    public int children(int r, int[] out) {
                        return Trees.binomialChildren(r, rt, nn, out);
                    }
                }, "binomial n=" + n + " root=" + root);
                assertTrue(depth <= 32 - Integer.numberOfLeadingZeros(n), "binomial depth");
                assertEquals(n - 1, checkTree(n, new Shape() {
                    public int parent(int r) {
                        return Trees.chainParent(r, rt, nn);
                    }

                    public int children(int r, int[] out) {
                        return Trees.chainChildren(r, rt, nn, out);
                    }
                }, "chain n=" + n + " root=" + root));
            }
        }
    }
}
