package io.rdma4j.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class MediansTest {

    @Test
    void middleValueOfAnOddCountAndMeanOfTheMiddleTwoOfAnEvenOne() {
        assertEquals(3, Medians.of(new double[] {9, 3, 1}));
        assertEquals(4.5, Medians.of(new double[] {8, 1, 4, 5}));
        assertEquals(7, Medians.of(new double[] {7}));
    }

    @Test
    void aRangeIsTakenAloneAndLeftInPlace() {
        double[] values = {100, 5, 1, 3, -100};
        assertEquals(3, Medians.of(values, 1, 3));
        assertArrayEquals(new double[] {100, 5, 1, 3, -100}, values);
        assertThrows(IllegalArgumentException.class, () -> Medians.of(values, 2, 0));
    }
}
