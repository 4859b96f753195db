"""
A test server made of the real prometheus_client (Debian's python3-prometheus-client), serving a
registry shaped like vLLM's: the metrics of a real vLLM scrape (tests/fixtures/real-metrics),
rebuilt as prometheus_client Gauges, Counters and Histograms, mounted the way vLLM >= 0.8.3 mounts
them: an exact /metrics ignores the query (prometheus_fastapi_instrumentator's route) and /metrics/
is prometheus_client's own app, which honours name[]. GET /stats says what the server sent (requests
and bytes per path) and its own CPU time, so a test or the bench counts on the server's side.

Usage: python3 prom-vllm.py FIXTURE single|multi [MULTIPROC_DIR]; prints the port it listens on
(127.0.0.1, port 0) on its first line. "multi" is prometheus_client's multiprocess mode
(PROMETHEUS_MULTIPROC_DIR + MultiProcessCollector, as vLLM with several API servers and SGLang):
its collector has no names, so a filtered answer is an empty 200.
"""
import json
import os
import re
import sys
import time
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

fixture, mode = sys.argv[1], sys.argv[2]
if mode == "multi":
    # Before prometheus_client is imported: it picks its value class from the environment.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = sys.argv[3]

import prometheus_client  # noqa: E402
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app, multiprocess  # noqa: E402

LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# Made by prometheus_client's own default collectors (single process), not rebuilt.
DEFAULT = ("python_gc_", "python_info", "process_")


def parse(path):
    types, helps, samples = {}, {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                types[name] = kind
            elif line.startswith("# HELP "):
                parts = line.split(" ", 3)
                helps[parts[2]] = parts[3] if len(parts) > 3 else ""
            elif line and not line.startswith("#"):
                m = LINE.match(line)
                samples.append((m.group(1), dict(LABEL.findall(m.group(3) or "")), float(m.group(4))))
    return types, helps, samples


def family_of(name, types):
    for suffix in ("_bucket", "_count", "_sum", "_total"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) in ("histogram", "counter"):
            return name[: -len(suffix)], suffix
    if name.endswith("_total") and types.get(name) == "counter":
        return name[:-6], "_total"
    if types.get(name) == "gauge":
        return name, ""
    return None, None


def build(path, registry):
    types, helps, samples = parse(path)
    families = {}
    for name, labels, value in samples:
        if name.endswith("_created"):
            continue  # prometheus_client writes its own
        base, suffix = family_of(name, types)
        if base is None or base.startswith(DEFAULT):
            continue
        families.setdefault(base, []).append((suffix, labels, value))
    for base, series in families.items():
        kind = types.get(base) or types.get(base + "_total")
        names = sorted({k for _, l, _ in series for k in l if k != "le"})
        doc = helps.get(base) or helps.get(base + "_total") or base
        child = lambda m, l: m.labels(**{k: l[k] for k in names}) if names else m  # noqa: E731
        if kind == "gauge":
            m = Gauge(base, doc, names, registry=registry, multiprocess_mode="livesum")
            for _, l, v in series:
                child(m, l).set(v)
        elif kind == "counter":
            m = Counter(base, doc, names, registry=registry)
            for _, l, v in series:
                child(m, l).inc(v)
        elif kind == "histogram":
            bounds = sorted({float(l["le"]) for s, l, _ in series if s == "_bucket"})
            m = Histogram(base, doc, names, buckets=bounds, registry=registry)
            for s, l, v in series:
                if s != "_sum":
                    continue
                c = child(m, l)
                same = sorted((x for x in series if x[0] == "_bucket" and all(x[1].get(k) == l.get(k) for k in names)), key=lambda x: float(x[1]["le"]))
                previous = 0.0
                for i, (_, _, count) in enumerate(same):
                    c._buckets[i].inc(count - previous)  # the real cumulative counts
                    previous = count
                c._sum.inc(v)


if mode == "multi":
    build(fixture, None)  # values go to the mmap files, read back by the collector per scrape
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
else:
    registry = prometheus_client.REGISTRY
    build(fixture, registry)

metrics_app = make_wsgi_app(registry)
sent = {}  # path -> {"requests": n, "bytes": n, "names": most name[] in one request, "withBuckets": requests that asked a *_bucket}


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/stats":
        body = json.dumps({"paths": sent, "cpuSeconds": time.process_time(), "prometheusClient": getattr(prometheus_client, "__version__", "?")}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    if path == "/health":
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]
    if path not in ("/metrics", "/metrics/"):
        start_response("404 Not Found", [("Content-Length", "0")])
        return [b""]
    if path == "/metrics":
        # vLLM >= 0.8.3: prometheus_fastapi_instrumentator answers an exact /metrics, query ignored.
        environ = {**environ, "QUERY_STRING": ""}
    chunks = list(metrics_app(environ, start_response))
    count = sent.setdefault(path, {"requests": 0, "bytes": 0, "names": 0, "withBuckets": 0})
    count["requests"] += 1
    count["bytes"] += sum(len(c) for c in chunks)
    names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]", [])
    count["names"] = max(count["names"], len(names))
    count["withBuckets"] += any(n.endswith("_bucket") for n in names)
    return chunks


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
print(server.server_port, flush=True)
server.serve_forever()
