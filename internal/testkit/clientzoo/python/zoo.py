"""The Python clients of the client zoo (internal/testkit/clientzoo):
librdkafka through confluent-kafka, and kafka-python. It produces, then
consumes, a bounded number of records with the library configuration the
harness computed, and prints one line "zoo-result {json}" with what it did.

    python zoo.py '{"library": "confluent-kafka" | "kafka-python",
                    "topic": ..., "records": N, "record_size": B,
                    "burst": K, "rate": R, "consume": M, "timeout_s": T,
                    "producer": {library config} | null,
                    "consumer": {library config} | null}'

Exit 1 when fewer records than asked were acknowledged or consumed.
"""

import json
import sys
import time


def pace(start, i, burst, rate):
    """Sleep until record i is due: the first burst at once, then rate/s."""
    if i < burst or rate <= 0:
        return
    wait = start + (i - burst) / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)


def rdkafka_produce(job, deadline):
    from confluent_kafka import Producer

    acked, errors = [0], []

    def delivered(err, _msg):
        if err is None:
            acked[0] += 1
        elif not errors:
            errors.append(str(err))

    p = Producer(job["producer"])
    value = b"v" * job["record_size"]
    start = time.monotonic()
    for i in range(job["records"]):
        if time.monotonic() > deadline:
            break
        pace(start, i, job["burst"], job["rate"])
        while True:
            try:
                p.produce(job["topic"], value, key=b"k%d" % i, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    p.flush(max(deadline - time.monotonic(), 0.1))
    return acked[0], errors[0] if errors else None


def rdkafka_consume(job, deadline):
    from confluent_kafka import Consumer

    c = Consumer(job["consumer"])
    c.subscribe([job["topic"]])
    got, error = 0, None
    try:
        while got < job["consume"] and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error():
                error = error or str(m.error())
                continue
            got += 1
        if got:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return got, error


def kafka_python_config(conf):
    conf = dict(conf)
    if "api_version" in conf:
        conf["api_version"] = tuple(conf["api_version"])
    return conf


def kafka_python_produce(job, deadline):
    from kafka import KafkaProducer

    p = KafkaProducer(**kafka_python_config(job["producer"]))
    value = b"v" * job["record_size"]
    start = time.monotonic()
    futures = []
    for i in range(job["records"]):
        if time.monotonic() > deadline:
            break
        pace(start, i, job["burst"], job["rate"])
        futures.append(p.send(job["topic"], key=b"k%d" % i, value=value))
    p.flush(timeout=max(deadline - time.monotonic(), 0.1))
    acked, error = 0, None
    for f in futures:
        if f.succeeded():
            acked += 1
        elif error is None and f.is_done:
            error = repr(f.exception)
    p.close(timeout=5)
    return acked, error


def kafka_python_consume(job, deadline):
    from kafka import KafkaConsumer

    c = KafkaConsumer(**kafka_python_config(job["consumer"]))
    c.subscribe([job["topic"]])
    got = 0
    try:
        while got < job["consume"] and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=100).values():
                got += len(recs)
        if got:
            c.commit()
    finally:
        c.close()
    return got, None


LIBRARIES = {
    "confluent-kafka": (rdkafka_produce, rdkafka_consume),
    "kafka-python": (kafka_python_produce, kafka_python_consume),
}


def run(job):
    produce, consume = LIBRARIES[job["library"]]
    deadline = time.monotonic() + job["timeout_s"]
    res = {"produced": 0, "consumed": 0}
    if job.get("producer") is not None:
        res["produced"], err = produce(job, deadline)
        if res["produced"] < job["records"]:
            res["error"] = "produce: %d of %d records acknowledged (%s)" % (res["produced"], job["records"], err)
            return res
    if job.get("consumer") is not None:
        res["consumed"], err = consume(job, deadline)
        if res["consumed"] < job["consume"]:
            res["error"] = "consume: %d of %d records (%s)" % (res["consumed"], job["consume"], err)
    return res


def main():
    job = json.loads(sys.argv[1])
    try:
        res = run(job)
    except Exception as e:  # reported on the result line, then exit 1
        res = {"produced": 0, "consumed": 0, "error": "%s: %s" % (type(e).__name__, e)}
    print("zoo-result " + json.dumps(res), flush=True)
    sys.exit(1 if "error" in res else 0)


if __name__ == "__main__":
    main()
