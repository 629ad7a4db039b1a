// ZooClient is the Java client of the client zoo (internal/testkit/clientzoo):
// it produces, or consumes, a bounded number of records with the Kafka Java
// client it is compiled against and run with (kafka-clients 2.0 to 4.x: it
// uses only APIs all of them have), configured by the properties the
// harness passes, and prints one line "zoo-result {json}" with what it did.
//
//   java -cp CLASSES:LIBS/* ZooClient produce TOPIC RECORDS RECORD_SIZE BURST RATE DEADLINE_MS key=value...
//   java -cp CLASSES:LIBS/* ZooClient consume TOPIC RECORDS DEADLINE_MS key=value...
//   java -cp CLASSES:LIBS/* ZooClient produce ... -- consume ...   (one after the other)
//
// Produce sends RECORDS keyed records of RECORD_SIZE bytes, the first BURST
// at once and the rest at RATE per second, in one transaction when
// transactional.id is set. Consume reads RECORDS records from the start of
// TOPIC in the group of group.id, commits and leaves. Both stop at
// DEADLINE_MS (ms since the epoch); exit 1 when short.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public final class ZooClient {
    public static void main(String[] args) throws Exception {
        int status = 0;
        for (String[] job : jobs(args)) {
            try {
                status = Math.max(status, run(job));
            } catch (Exception e) {
                result(0, 0, e.toString());
                throw e;
            }
        }
        System.exit(status);
    }

    // jobs splits the command line at "--" into the jobs run one after the other.
    private static List<String[]> jobs(String[] args) {
        List<String[]> jobs = new ArrayList<>();
        int from = 0;
        for (int i = 0; i <= args.length; i++) {
            if (i == args.length || "--".equals(args[i])) {
                jobs.add(Arrays.copyOfRange(args, from, i));
                from = i + 1;
            }
        }
        return jobs;
    }

    private static int run(String[] job) throws Exception {
        if (job.length >= 7 && "produce".equals(job[0])) {
            return produce(job);
        }
        if (job.length >= 4 && "consume".equals(job[0])) {
            return consume(job);
        }
        return usage();
    }

    private static int usage() {
        System.err.println("usage: ZooClient produce TOPIC RECORDS RECORD_SIZE BURST RATE DEADLINE_MS key=value...");
        System.err.println("       ZooClient consume TOPIC RECORDS DEADLINE_MS key=value...");
        System.err.println("       (jobs separated by --, run one after the other)");
        System.exit(2);
        return 2;
    }

    private static Properties props(String[] args, int from) {
        Properties p = new Properties();
        for (int i = from; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("not key=value: " + args[i]);
            }
            p.setProperty(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        return p;
    }

    private static int produce(String[] args) throws Exception {
        String topic = args[1];
        int records = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        int burst = Integer.parseInt(args[4]);
        int rate = Integer.parseInt(args[5]);
        long deadline = Long.parseLong(args[6]);
        Properties p = props(args, 7);
        p.setProperty("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.setProperty("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        boolean txn = p.getProperty("transactional.id") != null;
        AtomicInteger acked = new AtomicInteger();
        AtomicReference<String> firstErr = new AtomicReference<>();
        byte[] value = new byte[size];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            if (txn) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            long start = System.currentTimeMillis();
            for (int i = 0; i < records && System.currentTimeMillis() < deadline; i++) {
                if (i >= burst && rate > 0) {
                    long due = start + (long) (i - burst) * 1000 / rate;
                    long wait = due - System.currentTimeMillis();
                    if (wait > 0) {
                        Thread.sleep(wait);
                    }
                }
                byte[] key = ("k" + i).getBytes("UTF-8");
                producer.send(new ProducerRecord<>(topic, key, value), (md, e) -> {
                    if (e == null) {
                        acked.incrementAndGet();
                    } else {
                        firstErr.compareAndSet(null, e.toString());
                    }
                });
            }
            producer.flush();
            if (txn) {
                producer.commitTransaction();
            }
        }
        result(acked.get(), 0, firstErr.get());
        return acked.get() >= records ? 0 : 1;
    }

    private static int consume(String[] args) {
        String topic = args[1];
        int records = Integer.parseInt(args[2]);
        long deadline = Long.parseLong(args[3]);
        Properties p = props(args, 4);
        p.setProperty("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.setProperty("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.setProperty("auto.offset.reset", "earliest");
        p.setProperty("enable.auto.commit", "false");
        int got = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(Collections.singletonList(topic));
            while (got < records && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> rs = consumer.poll(Duration.ofMillis(100));
                got += rs.count();
            }
            consumer.commitSync();
        }
        result(0, got, got >= records ? null : "deadline with " + got + " of " + records + " records");
        return got >= records ? 0 : 1;
    }

    private static void result(int produced, int consumed, String err) {
        StringBuilder b = new StringBuilder("zoo-result {\"produced\":").append(produced)
            .append(",\"consumed\":").append(consumed);
        if (err != null) {
            b.append(",\"error\":\"").append(err.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ")).append('"');
        }
        System.out.println(b.append('}'));
    }
}
