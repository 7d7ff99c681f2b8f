// A Flink DataStream job that writes its own measured latency for Mace with Flink's
// FileSink: one JSON line per output with the columns of the `outputs/` record set
// (query, operator, stimulus_time, egress_time; times in epoch seconds). No Mace code
// runs inside the job. See docs/flink.md, "A Java job writes its own outputs/".
//
//   javac -cp "$FLINK_LIB/*" -d build ClickJob.java
//   java -cp "build:$FLINK_LIB/*" ClickJob --outputs LANDING/RUN_ID/outputs --rest-port 8081
//
// Run with `java`, it starts a local MiniCluster whose REST API `mace collect flink`
// reads; packaged in a jar, the same main runs on a cluster with `flink run`.

import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;
import org.apache.flink.util.Collector;

public class ClickJob {

    public static void main(String[] args) throws Exception {
        Map<String, String> arg = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            arg.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String outputs = arg.get("outputs"); // LANDING/RUN_ID/outputs
        // The ids `mace collect flink` gives the sink in topology.yaml: its writer operator
        // and the query named after it (`outputs: Writer` -> `outputs`).
        String sink = arg.getOrDefault("sink", "outputs");
        int seconds = Integer.parseInt(arg.getOrDefault("seconds", "60"));
        double base = Double.parseDouble(arg.getOrDefault("rate", "300")); // events/s
        double peak = Double.parseDouble(arg.getOrDefault("burst-rate", "2500"));
        long workMicros = Long.parseLong(arg.getOrDefault("work-us", "400")); // CPU per event

        // Settings for a local run (ignored by `flink run` on a cluster): the REST API on
        // 127.0.0.1 for the collector, metrics refreshed every second (default 10 s).
        Map<String, String> settings = new HashMap<>();
        settings.put("rest.address", "127.0.0.1");
        settings.put("rest.bind-address", "127.0.0.1");
        settings.put("rest.port", arg.getOrDefault("rest-port", "8081"));
        settings.put("jobmanager.bind-host", "127.0.0.1");
        settings.put("taskmanager.bind-host", "127.0.0.1");
        settings.put("taskmanager.host", "127.0.0.1");
        settings.put("metrics.fetcher.update-interval", "1000");
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(settings));
        env.setParallelism(1);
        // FileSink commits its part files on checkpoints: rows appear one interval late.
        env.enableCheckpointing(Duration.ofSeconds(5).toMillis());

        // Bursty clicks (user, sequence number, stimulus time in epoch seconds), stamped
        // when the source emits them: 10 s at `rate`, then 5 s at `burst-rate`, repeated.
        Bursty bursty = new Bursty(base, peak, 15_000, 5_000);
        DataGeneratorSource<Tuple3<Integer, Long, Double>> clicks = new DataGeneratorSource<>(
                n -> Tuple3.of((int) (n % 50), n, System.currentTimeMillis() / 1000.0),
                bursty.events(seconds),
                bursty,
                Types.TUPLE(Types.INT, Types.LONG, Types.DOUBLE));

        env.fromSource(clicks, WatermarkStrategy.noWatermarks(), "clicks")
                .keyBy(click -> click.f0)
                .process(new CountPerUser(workMicros))
                .name("count")
                // egress time stamped last, then one JSON object per line
                .map(counted -> String.format(Locale.ROOT,
                        "{\"query\":\"%s\",\"operator\":\"%s\",\"stimulus_time\":%.3f,"
                                + "\"egress_time\":%.3f}",
                        sink, sink, counted.f2, System.currentTimeMillis() / 1000.0))
                .name("format")
                .sinkTo(FileSink.forRowFormat(new Path(outputs), new SimpleStringEncoder<String>("UTF-8"))
                        // files straight in outputs/ (the default assigner adds hourly folders)
                        .withBucketAssigner(new BasePathBucketAssigner<>())
                        .withRollingPolicy(OnCheckpointRollingPolicy.build())
                        .build())
                .name(sink);

        env.execute("clickjob");
    }

    /** Clicks per user so far; spins `workMicros` of CPU per click (the job's work). */
    static final class CountPerUser
            extends KeyedProcessFunction<Integer, Tuple3<Integer, Long, Double>, Tuple3<Integer, Long, Double>> {
        private final long workMicros;
        private transient ValueState<Long> count;

        CountPerUser(long workMicros) {
            this.workMicros = workMicros;
        }

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Tuple3<Integer, Long, Double> click, Context ctx,
                Collector<Tuple3<Integer, Long, Double>> out) throws Exception {
            long deadline = System.nanoTime() + workMicros * 1_000;
            while (System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            long seen = count.value() == null ? 1 : count.value() + 1;
            count.update(seen);
            out.collect(Tuple3.of(click.f0, seen, click.f2));
        }
    }

    /** `base` events/s, and `peak` for the first `burstMs` of every `periodMs`. */
    static final class Bursty implements RateLimiterStrategy {
        private final double base;
        private final double peak;
        private final long periodMs;
        private final long burstMs;

        Bursty(double base, double peak, long periodMs, long burstMs) {
            this.base = base;
            this.peak = peak;
            this.periodMs = periodMs;
            this.burstMs = burstMs;
        }

        double rateAt(long millis) {
            return millis % periodMs >= periodMs - burstMs ? peak : base;
        }

        /** How many events `seconds` of this pattern hold (the source then ends). */
        long events(int seconds) {
            long total = 0;
            for (long s = 0; s < seconds; s++) {
                total += (long) rateAt(s * 1000);
            }
            return total;
        }

        @Override
        public RateLimiter createRateLimiter(int parallelism) {
            long start = System.currentTimeMillis();
            return new RateLimiter() {
                private long next = System.nanoTime();

                @Override
                public CompletionStage<Void> acquire(int permits) {
                    double rate = rateAt(System.currentTimeMillis() - start) / parallelism;
                    // no catching up after a stall: a backpressured source stays behind
                    next = Math.max(next, System.nanoTime()) + (long) (permits * 1e9 / rate);
                    long wait = next - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    return CompletableFuture.completedFuture(null);
                }
            };
        }
    }
}
