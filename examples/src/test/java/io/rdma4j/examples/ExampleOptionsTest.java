package io.rdma4j.examples;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The examples' options: a mistyped or incomplete option is refused, not run with the defaults. */
class ExampleOptionsTest {

    @Test
    void frameworkExampleOptionsAreReadAndMistakesRefused() {
        FrameworkExample.Options o = FrameworkExample.Options.parse(new String[] {"--steps", "50", "--hidden", "8"}, 2);
        assertEquals(50, o.steps());
        assertEquals(8, o.hidden());
        assertEquals(20, o.warmupSteps(), "a default");
        assertTrue(refused(() -> FrameworkExample.Options.parse(new String[] {"--step", "50"}, 2))
                .contains("unknown option --step"));
        assertTrue(refused(() -> FrameworkExample.Options.parse(new String[] {"--steps"}, 2)).contains("--steps needs a value"));
        assertTrue(refused(() -> FrameworkExample.Options.parse(new String[] {"--steps", "many"}, 2))
                .contains("--steps needs an integer"));
    }

    @Test
    void dataParallelTrainerRefusesStepsItCannotTake() {
        Path[] out = new Path[1];
        assertEquals(7, DataParallelTrainer.Config.parse(new String[] {"--steps", "7"}, out).steps());
        assertTrue(refused(() -> DataParallelTrainer.Config.parse(new String[] {"--steps", "0"}, out)).contains("bad options"));
        assertTrue(refused(() -> DataParallelTrainer.Config.parse(new String[] {"--lr", "NaN"}, out)).contains("bad options"));
        assertTrue(refused(() -> DataParallelTrainer.Config.parse(new String[] {"--steps", "ten"}, out))
                .contains("--steps needs a number"));
    }

    private static String refused(Runnable parse) {
        return assertThrows(IllegalArgumentException.class, parse::run).getMessage();
    }
}
