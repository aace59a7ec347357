package io.rdma4j.collectives.algo;

/**
 * Tree shapes over group ranks.
 *
 * <p><b>Double binary tree</b> (the construction NCCL uses): tree 0 is an in-order binary tree
 * on 0..n-1 in which a node v with lowest set bit b has children v-b/2 and v+b/2 (the right one
 * pulled in while it is out of range) and rank 0 is a root with a single child; its leaves are
 * exactly the odd ranks. Tree 1 mirrors it (rank r plays position n-1-r) when n is even, so its
 * leaves are the even ranks and every rank is interior in at most one tree; when n is odd it is
 * shifted by one instead (one rank is then interior in both).
 *
 * <p><b>Binomial</b> and <b>chain</b> trees rooted anywhere are used by broadcast and reduce.
 */
public final class Trees {
    private Trees() {
    }

    /** Parent of position v in the in-order binary tree of n nodes, -1 for the root 0. */
    static int btreeParent(int v, int n) {
        if (v == 0) {
            return -1;
        }
        int b = Integer.lowestOneBit(v);
        int up = (v & ~b) | (b << 1);
        return up >= n ? v & ~b : up;
    }

    /** Children of position v (0, 1 or 2 of them) into {@code out}; returns how many. */
    static int btreeChildren(int v, int n, int[] out) {
        if (v == 0) {
            if (n <= 1) {
                return 0;
            }
            out[0] = Integer.highestOneBit(n - 1);
            return 1;
        }
        int c = Integer.lowestOneBit(v) >> 1;
        if (c == 0) {
            return 0;
        }
        int k = 0;
        out[k++] = v - c;
        int d = c;
        while (d > 0 && v + d >= n) {
            d >>= 1;
        }
        if (d > 0) {
            out[k++] = v + d;
        }
        return k;
    }

    private static int position(int tree, int r, int n) {
        if (tree == 0) {
            return r;
        }
        return n % 2 == 0 ? n - 1 - r : (r - 1 + n) % n;
    }

    private static int rankOf(int tree, int v, int n) {
        if (tree == 0 || v < 0) {
            return v;
        }
        return n % 2 == 0 ? n - 1 - v : (v + 1) % n;
    }

    /** Parent of rank r in double-binary tree {@code tree} (0 or 1), -1 for its root. */
    public static int dtreeParent(int tree, int r, int n) {
        return rankOf(tree, btreeParent(position(tree, r, n), n), n);
    }

    /** Children of rank r in double-binary tree {@code tree}; returns how many (at most 2). */
    public static int dtreeChildren(int tree, int r, int n, int[] out) {
        int k = btreeChildren(position(tree, r, n), n, out);
        for (int i = 0; i < k; i++) {
            out[i] = rankOf(tree, out[i], n);
        }
        return k;
    }

    /** Parent of rank r in the binomial tree rooted at {@code root}, -1 for the root. */
    public static int binomialParent(int r, int root, int n) {
        int v = (r - root + n) % n;
        if (v == 0) {
            return -1;
        }
        return ((v - Integer.highestOneBit(v)) + root) % n;
    }

    /** Children of rank r in the binomial tree rooted at {@code root}, nearest subtree last. */
    public static int binomialChildren(int r, int root, int n, int[] out) {
        int v = (r - root + n) % n;
        int k = 0;
        int bit = v == 0 ? 1 : Integer.highestOneBit(v) << 1;
        for (; v + bit < n; bit <<= 1) {
            out[k++] = (v + bit + root) % n;
        }
        // farthest (largest subtree) first: it has the longest way to go
        for (int i = 0; i < k / 2; i++) {
            int t = out[i];
            out[i] = out[k - 1 - i];
            out[k - 1 - i] = t;
        }
        return k;
    }

    /** Parent in the chain root, root+1, ..., -1 for the root. */
    public static int chainParent(int r, int root, int n) {
        return r == root ? -1 : (r - 1 + n) % n;
    }

    public static int chainChildren(int r, int root, int n, int[] out) {
        int next = (r + 1) % n;
        if (next == root) {
            return 0;
        }
        out[0] = next;
        return 1;
    }

    /** Maximum number of binomial children in a group of n. */
    static int maxChildren(int n) {
        return 32 - Integer.numberOfLeadingZeros(Math.max(1, n - 1)) + 1;
    }
}
