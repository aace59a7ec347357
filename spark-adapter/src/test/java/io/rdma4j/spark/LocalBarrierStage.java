package io.rdma4j.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/** The tests' Spark: one barrier stage of N tasks in local[N], on loopback, each task running {@code body}. */
final class LocalBarrierStage {
    /** What each barrier task runs; its result comes back to the test. */
    interface TaskBody extends Serializable {
        String run() throws Exception;
    }

    private LocalBarrierStage() {
    }

    /** Runs {@code body} in each of {@code tasks} barrier tasks; returns their results, sorted. */
    static String[] run(int tasks, TaskBody body) {
        SparkConf conf = new SparkConf().setMaster("local[" + tasks + "]").setAppName("rdma4j-barrier-test")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1");
        List<Integer> partitions = new ArrayList<>();
        for (int t = 0; t < tasks; t++) {
            partitions.add(t);
        }
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            Function1<scala.collection.Iterator<Integer>, scala.collection.Iterator<String>> task =
                    (Function1<scala.collection.Iterator<Integer>, scala.collection.Iterator<String>> & Serializable)
                            partition -> {
                                try {
                                    return CollectionConverters.asScala(Collections.singletonList(body.run()).iterator());
                                } catch (RuntimeException e) {
                                    throw e;
                                } catch (Exception e) {
                                    throw new IllegalStateException(e);
                                }
                            };
            String[] results = (String[]) sc.parallelize(partitions, tasks).rdd().barrier()
                    .mapPartitions(task, false, ClassTag$.MODULE$.apply(String.class)).collect();
            Arrays.sort(results);
            return results;
        }
    }
}
