"""Remote data sets (s3:// and http(s)://) against real local servers: a moto S3 server and
a plain HTTP server (tests/python/remote_servers.py) on 127.0.0.1, each in its own process.
Shards, records and files are written locally, uploaded with boto3 (an independent S3
client), read back through every reader and compared byte for byte with the local read of
the same files; a fault-injecting proxy (503 SlowDown, resets, stalls, slow answers,
dropped connections) in front of moto proves the retries. The tests skip only when moto
cannot be imported or the servers do not start."""

import gc
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request

import numpy as np
import pytest

import stoker
from stoker import fn, tfrecord as tfrec
from stoker.errors import NotFoundError, StokerError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PHOTOS = os.path.join(ROOT, "data", "photos")
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
SERVERS = os.path.join(HERE, "remote_servers.py")
BUCKET = "stk-test"

sys.path.insert(0, HERE)
from test_formats import example, write_shard, write_tfrecord  # noqa: E402  (shared writers)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def start_helper(*args, env=None):
    """A remote_servers.py process; returns (process, port)."""
    proc = subprocess.Popen([sys.executable, SERVERS, *args], stdout=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, text=True)
    line = proc.stdout.readline().split()
    assert line and line[0] == "PORT", f"helper {args} did not start"
    return proc, int(line[1])


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def cannot_run(why):
    """Skips, except where the tests must run (CI sets STK_REQUIRE_REMOTE_TESTS=1)."""
    if os.environ.get("STK_REQUIRE_REMOTE_TESTS") == "1":
        pytest.fail(why + " (STK_REQUIRE_REMOTE_TESTS=1: these tests must run)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def moto_port():
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as e:
        cannot_run(f"moto[server] is not installed ({e}); scripts/setup.sh installs it")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_listening(port, proc):
        stop(proc)
        cannot_run("the moto S3 server did not start")
    yield port
    stop(proc)


ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
       "AWS_SESSION_TOKEN": "testing-token", "AWS_REGION": "us-east-1",
       "STK_REMOTE_BACKOFF_MS": "5", "STK_REMOTE_TIMEOUT": "2"}


def set_endpoint(port):
    # No reader runs while the environment changes: the library reads it per request.
    gc.collect()
    os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def s3(moto_port):
    import boto3
    saved = {k: os.environ.get(k) for k in list(ENV) + ["AWS_ENDPOINT_URL"]}
    os.environ.update(ENV)
    set_endpoint(moto_port)
    client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{moto_port}",
                          region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    client.create_bucket(Bucket=BUCKET)
    yield client
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def photo(name):
    with open(os.path.join(PHOTOS, name), "rb") as f:
        return f.read()


NAMES = sorted(n for n in os.listdir(PHOTOS) if n.endswith((".jpg", ".png")))[:6]


def make_dataset(d):
    """wds/ (3 tar shards), tfrec/ (2 files + index files), npy/ (arrays in
    sub-directories), img/ (an ImageFolder of 2 classes)."""
    os.makedirs(d / "wds")
    k = 0
    for s in range(3):
        members = []
        for _ in range(4):
            img = photo(NAMES[k % len(NAMES)])
            members += [(f"s{k:04d}.jpg", img), (f"s{k:04d}.cls", str(k).encode())]
            k += 1
        write_shard(str(d / "wds" / f"shard-{s:06d}.tar"), members, tarfile.GNU_FORMAT)
    os.makedirs(d / "tfrec")
    for f in range(2):
        recs = [example({"image/encoded": photo(NAMES[(f * 3 + i) % len(NAMES)]),
                         "label": [f * 10 + i]}) for i in range(3)]
        index = write_tfrecord(str(d / "tfrec" / f"part-{f}.tfrecord"), recs)
        with open(d / "tfrec" / f"part-{f}.idx", "w") as fh:
            fh.writelines(f"{o} {n}\n" for o, n in index)
    rng = np.random.default_rng(5)
    for i in range(5):
        os.makedirs(d / "npy" / f"g{i % 2}", exist_ok=True)
        np.save(d / "npy" / f"g{i % 2}" / f"a{i}.npy",
                rng.standard_normal((3, i + 2)).astype(np.float32))
    for cls, names in (("cats", NAMES[:2]), ("dogs-and-more", NAMES[2:5])):
        os.makedirs(d / "img" / cls)
        for n in names:
            shutil.copy(os.path.join(PHOTOS, n), d / "img" / cls / n)
    return d


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, s3):
    d = make_dataset(tmp_path_factory.mktemp("remote") / "data")
    for dirpath, _dirs, files in os.walk(d):
        for f in files:
            path = os.path.join(dirpath, f)
            key = os.path.relpath(path, d)
            s3.upload_file(path, BUCKET, key)
    return d


@pytest.fixture(scope="module")
def http_root(dataset):
    proc, port = start_helper("http", str(dataset))
    yield f"http://127.0.0.1:{port}"
    stop(proc)


def epochs(define, batch, n_batches, **kw):
    """Every output of n_batches batches, as bytes per sample (a fresh pipeline)."""
    pipe = stoker.pipeline_def(define, batch_size=batch, num_threads=3, seed=11, **kw)()
    outs = []
    for _ in range(n_batches):
        out = pipe.run()
        outs.append([[np.array(s).tobytes() + str(np.array(s).shape).encode() for s in tl]
                     for tl in out])
    return outs, pipe


def wds(paths, **kw):
    return lambda: fn.readers.webdataset(paths=paths, ext=["jpg", "cls"], name="Reader", **kw)


# ---- every reader, local vs S3 vs HTTP ----

def test_webdataset_s3_and_http_read_what_is_on_disk(dataset, http_root):
    local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar")), 4, 3)
    for paths in (f"s3://{BUCKET}/wds/shard-{{000000..000002}}.tar",  # brace pattern
                  f"s3://{BUCKET}/wds/*.tar",  # listing of the prefix, filtered
                  f"{http_root}/wds/shard-{{000000..000002}}.tar"):
        remote, pipe = epochs(wds(paths), 4, 3)
        assert remote == local, paths
        assert pipe.epoch_size("Reader") == 12
    # the bytes are the files' own: check one sample against the photo directly
    assert local[0][0][0].startswith(photo(NAMES[0]))


def upload_wds_indexes(dataset, s3):
    """DALI-format index files of the shards (data offsets from tarfile), to wds-idx/."""
    for s in range(3):
        with tarfile.open(dataset / "wds" / f"shard-{s:06d}.tar") as t:
            members = t.getmembers()
        lines = [f"v1.2 {len(members) // 2}\n"]
        for a, b in zip(members[::2], members[1::2]):
            lines.append(f"jpg {a.offset_data} {a.size} {a.name} "
                         f"cls {b.offset_data} {b.size} {b.name}\n")
        s3.put_object(Bucket=BUCKET, Key=f"wds-idx/shard-{s:06d}.idx",
                      Body="".join(lines).encode())


def test_webdataset_index_files_may_be_remote(dataset, s3):
    upload_wds_indexes(dataset, s3)
    local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar")), 6, 2)
    remote, _ = epochs(wds(f"s3://{BUCKET}/wds/shard-{{000000..000002}}.tar",
                           index_paths=f"s3://{BUCKET}/wds-idx/shard-{{000000..000002}}.idx"),
                       6, 2)
    assert remote == local


@pytest.mark.parametrize("cache", [("4096", "256"), ("4", "1")])  # block KiB, cache MiB
def test_streaming_shuffled_remote_order_is_the_local_order(dataset, monkeypatch, cache):
    """The sampler decides the order: remote data changes nothing, across epochs and
    shards, with the default blocks and with tiny ones (many blocks per shard, a cache
    of four blocks, so blocks are evicted and fetched again)."""
    monkeypatch.setenv("STK_REMOTE_BLOCK_KB", cache[0])
    monkeypatch.setenv("STK_REMOTE_CACHE_MB", cache[1])
    kw = dict(streaming=True, random_shuffle=True, initial_fill=5, seed=3, num_shards=2)
    for shard in (0, 1):
        local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar"),
                              shard_id=shard, **kw), 2, 9)
        remote, _ = epochs(wds(f"s3://{BUCKET}/wds/shard-{{000000..000002}}.tar",
                               shard_id=shard, **kw), 2, 9)
        assert remote == local


def test_a_cache_too_small_for_the_shuffle_buffer_is_named_and_still_correct(
        dataset, monkeypatch, capfd):
    monkeypatch.setenv("STK_REMOTE_BLOCK_KB", "64")
    monkeypatch.setenv("STK_REMOTE_CACHE_MB", "1")  # 16 blocks; the buffer needs about 20
    kw = dict(streaming=True, random_shuffle=True, initial_fill=12, seed=5)
    local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar"), **kw), 4, 6)
    remote, _ = epochs(wds(f"s3://{BUCKET}/wds/*.tar", **kw), 4, 6)
    assert remote == local
    err = capfd.readouterr().err
    assert "initial_fill=12" in err and "(or STK_REMOTE_CACHE_MB) to at least" in err
    monkeypatch.delenv("STK_REMOTE_CACHE_MB")  # unset: the reader sizes its cache itself
    epochs(wds(f"s3://{BUCKET}/wds/*.tar", **kw), 4, 1)
    assert "STK_REMOTE_CACHE_MB" not in capfd.readouterr().err


FEATURES = {"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
            "label": tfrec.FixedLenFeature([1], tfrec.int64, -1)}


@pytest.mark.parametrize("with_index", [False, True])
def test_tfrecord_s3_and_http(dataset, http_root, with_index):
    def tfr(base):
        def define():
            out = fn.readers.tfrecord(
                path=f"{base}/tfrec/part-{{0..1}}.tfrecord",
                index_path=f"{base}/tfrec/part-{{0..1}}.idx" if with_index else None,
                features=FEATURES, name="Reader")
            return out["image/encoded"], out["label"]
        return define

    local, _ = epochs(tfr(str(dataset)), 3, 4)
    for base in (f"s3://{BUCKET}", http_root):
        remote, _ = epochs(tfr(base), 3, 4)
        assert remote == local, base
    labels = sorted(int(np.frombuffer(s[:8], "<i8")[0]) for b in local[:2] for s in b[1])
    assert labels == [0, 1, 2, 10, 11, 12]


def test_numpy_s3_prefix_and_http_files(dataset, http_root):
    def npy(**kw):
        return lambda: fn.readers.numpy(name="Reader", **kw)

    local, _ = epochs(npy(file_root=str(dataset / "npy")), 5, 2)
    remote, _ = epochs(npy(file_root=f"s3://{BUCKET}/npy"), 5, 2)
    assert remote == local
    rels = ["g0/a0.npy", "g1/a1.npy", "g0/a2.npy"]
    local, _ = epochs(npy(file_root=str(dataset / "npy"), files=rels), 3, 1)
    remote, _ = epochs(npy(files=[f"{http_root}/npy/{r}" for r in rels]), 3, 1)
    assert remote == local
    want = np.load(dataset / "npy" / "g1" / "a1.npy")
    assert local[0][0][1] == want.tobytes() + str(want.shape).encode()


def test_file_reader_image_folder_on_s3(dataset, http_root, s3):
    def files(root):
        return lambda: fn.readers.file(file_root=root, name="Reader")

    local, lpipe = epochs(files(str(dataset / "img")), 5, 2)
    remote, rpipe = epochs(files(f"s3://{BUCKET}/img"), 5, 2)
    assert remote == local and rpipe.epoch_size("Reader") == lpipe.epoch_size("Reader") == 5
    # labels by sorted class directory, as locally
    labels = [np.frombuffer(s[:4], "<i4")[0] for s in local[0][1]]
    assert labels == [0, 0, 1, 1, 1]
    names = ["cats/" + NAMES[0], "dogs-and-more/" + NAMES[3]]
    local, _ = epochs(lambda: fn.readers.file(file_root=str(dataset / "img"), files=names), 2, 1)
    remote, _ = epochs(lambda: fn.readers.file(file_root=f"{http_root}/img", files=names), 2, 1)
    assert remote == local
    # a list file that is itself remote, its paths relative to its own directory
    s3.put_object(Bucket=BUCKET, Key="img/list.txt",
                  Body=f"{names[0]} 7\n# a comment\n{names[1]} 3\n".encode())
    listed, _ = epochs(lambda: fn.readers.file(file_list=f"s3://{BUCKET}/img/list.txt"), 2, 1)
    assert listed[0][0] == local[0][0]
    assert [np.frombuffer(s[:4], "<i4")[0] for s in listed[0][1]] == [7, 3]


def test_http_server_that_ignores_range(dataset):
    proc, port = start_helper("http", str(dataset), "--no-range")
    try:
        local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar")), 4, 3)
        remote, _ = epochs(wds(f"http://127.0.0.1:{port}/wds/shard-{{000000..000002}}.tar"),
                           4, 3)
        assert remote == local
    finally:
        stop(proc)


def test_missing_objects_name_the_url(dataset, http_root):
    url = f"s3://{BUCKET}/wds/shard-000009.tar"
    with pytest.raises(NotFoundError, match="shard-000009.tar"):
        epochs(wds(url), 1, 1)
    with pytest.raises(NotFoundError, match="nothing-here"):
        epochs(wds(f"s3://{BUCKET}/nothing-here/*.tar"), 1, 1)
    with pytest.raises(NotFoundError, match="404"):
        epochs(wds(f"{http_root}/wds/nope.tar"), 1, 1)
    with pytest.raises(StokerError, match="names no bucket"):
        epochs(wds("s3:///key.tar"), 1, 1)


# ---- https:// with a private certificate authority ----

def make_private_ca(d):
    """A CA and a server certificate for 127.0.0.1 signed by it (PEM files in d): the
    setup of an S3-compatible store or a web server inside an organisation."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import datetime
    import ipaddress

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stoker test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {n: str(d / f"{n}.pem") for n in ("ca", "cert", "key")}
    with open(paths["ca"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["cert"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths


def test_https_with_a_private_ca(dataset, tmp_path, monkeypatch):
    """https:// shards and files from a server whose certificate a private CA signed: read
    byte for byte like the local files once the CA is given (remote_ca_bundle, or
    STK_REMOTE_CA_BUNDLE), and refused, naming the URL, when it is not: the certificate
    is verified, never skipped."""
    try:
        pem = make_private_ca(tmp_path)
    except ImportError:
        cannot_run("the cryptography package (a moto dependency) is missing")
    proc, port = start_helper("http", str(dataset), f"--tls={pem['cert']},{pem['key']}")
    try:
        root = f"https://127.0.0.1:{port}"
        shards = f"{root}/wds/shard-{{000000..000002}}.tar"
        local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar")), 4, 3)
        remote, _ = epochs(wds(shards, remote_ca_bundle=pem["ca"]), 4, 3)
        assert remote == local
        # the variable does the same for every reader, here readers.file's files
        monkeypatch.setenv("STK_REMOTE_CA_BUNDLE", pem["ca"])
        files = [f"{root}/img/cats/{n}" for n in NAMES[:2]]
        pipe = stoker.pipeline_def(
            lambda: fn.readers.file(files=files, labels=[0, 1], name="R")[0],
            batch_size=2, num_threads=1)()
        got = [np.array(s).tobytes() for s in pipe.run()[0]]
        assert got == [photo(n) for n in NAMES[:2]]
        # without the CA (the system's CAs only): verification fails, the URL is named
        monkeypatch.delenv("STK_REMOTE_CA_BUNDLE")
        with pytest.raises(StokerError, match=re.escape(f"127.0.0.1:{port}")):
            epochs(wds(shards, remote_retries=0), 1, 1)
        # a CA file that does not exist is an error too, not a fallback to no verification
        with pytest.raises(StokerError):
            epochs(wds(shards, remote_retries=0, remote_ca_bundle=str(tmp_path / "no.pem")),
                   1, 1)
    finally:
        stop(proc)


# ---- signing ----

def test_requests_carry_valid_sigv4_signatures(s3, moto_port, monkeypatch, tmp_path):
    """A server that recomputes every request's AWS SigV4 signature as S3 does accepts
    GET, HEAD, listings (a query) and PUT, keys with spaces, a session token; a wrong
    secret is refused (403, named in the error)."""
    secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    proc, port = start_helper("sigv4", secret, "eu-central-1")
    try:
        monkeypatch.setenv("AWS_REGION", "eu-central-1")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        set_endpoint(port)
        out, _ = epochs(lambda: fn.readers.file(files=["s3://bkt/dir/a b+c.bin"]), 1, 1)
        assert out[0][0][0].startswith(b"signed ok")
        with pytest.raises(NotFoundError, match="holds no matching object"):  # listed, signed
            epochs(lambda: fn.readers.file(file_root="s3://bkt/some dir"), 1, 1)
        if os.path.exists(os.path.join(BUILD, "stoker")):
            os.makedirs(tmp_path / "src" / "c0")
            (tmp_path / "src" / "c0" / "x.jpg").write_bytes(b"\xff\xd8 not decoded")
            subprocess.run([os.path.join(BUILD, "stoker"), "convert", str(tmp_path / "src"),
                            "--to", "wds", "--out", "s3://bkt/conv"], check=True,
                           capture_output=True, timeout=60)  # PUTs
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        monkeypatch.setenv("STK_REMOTE_RETRIES", "0")
        with pytest.raises(StokerError, match=r"a b\+c.bin.*HTTP 403 \(SignatureDoesNotMatch\)"):
            epochs(lambda: fn.readers.file(files=["s3://bkt/dir/a b+c.bin"]), 1, 1)
    finally:
        stop(proc)
        set_endpoint(moto_port)


# ---- faults ----

@pytest.fixture
def proxy(moto_port, s3, dataset):
    """A fault-injecting proxy in front of moto; S3 requests go through it."""
    procs = []

    def start(plan, **env):
        proc, port = start_helper("proxy", str(moto_port), plan, env=env)
        procs.append(proc)
        set_endpoint(port)
        return port

    yield start
    set_endpoint(moto_port)
    for p in procs:
        stop(p)


def proxy_stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__stats", timeout=10) as r:
        return json.loads(r.read())


def test_faults_are_retried_and_every_reader_reads_the_same(dataset, proxy, monkeypatch):
    monkeypatch.setenv("STK_REMOTE_TIMEOUT", "1")  # a stall is given up after 1 s
    gc.collect()
    local = {
        "wds": epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar")), 4, 3)[0],
        "stream": epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar"), streaming=True,
                             random_shuffle=True, seed=1), 4, 6)[0],
        "npy": epochs(lambda: fn.readers.numpy(file_root=str(dataset / "npy")), 5, 1)[0],
        "file": epochs(lambda: fn.readers.file(file_root=str(dataset / "img")), 5, 1)[0],
    }
    port = proxy("ok,503,reset,ok,slow,drop,ok,ok,ok,ok,ok,ok,stall,ok,ok,ok",
                 STK_TEST_STALL_S="3")
    remote = {
        "wds": epochs(wds(f"s3://{BUCKET}/wds/*.tar"), 4, 3)[0],
        "stream": epochs(wds(f"s3://{BUCKET}/wds/*.tar", streaming=True, random_shuffle=True,
                             seed=1), 4, 6)[0],
        "npy": epochs(lambda: fn.readers.numpy(file_root=f"s3://{BUCKET}/npy"), 5, 1)[0],
        "file": epochs(lambda: fn.readers.file(file_root=f"s3://{BUCKET}/img"), 5, 1)[0],
    }
    assert remote == local  # nothing lost, duplicated or reordered
    stats = proxy_stats(port)
    for fault in ("503", "reset", "slow", "drop", "stall"):
        assert stats.get(fault, 0) >= 1, stats


def test_an_object_that_cannot_be_read_is_an_error_or_skipped(dataset, s3, proxy, monkeypatch):
    monkeypatch.setenv("STK_REMOTE_RETRIES", "2")
    upload_wds_indexes(dataset, s3)
    port = proxy("ok", STK_PROXY_FAIL_GET="wds/shard-000001.tar")
    url = f"s3://{BUCKET}/wds/shard-{{000000..000002}}.tar"
    with pytest.raises(StokerError, match=r"shard-000001\.tar.*HTTP 503 \(SlowDown\)"):
        epochs(wds(url), 4, 3)
    # index files given: the shard's samples fail when read, one by one
    idx = f"s3://{BUCKET}/wds-idx/shard-{{000000..000002}}.idx"
    out, pipe = epochs(wds(url, index_paths=idx), 4, 2, on_error="skip")
    assert pipe.stats()["skipped"] == 4  # shard 1's four samples, counted
    got = sorted(int(c.split(b"(")[0]) for b in out for c in b[1])
    assert got == [0, 1, 2, 3, 8, 9, 10, 11]
    assert proxy_stats(port)["ok"] >= 1


# ---- the CLI ----

@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "stoker")), reason="no stoker CLI")
def test_convert_uploads_shards_and_bench_reads_s3(dataset, s3, tmp_path):
    cli = os.path.join(BUILD, "stoker")
    src = str(dataset / "img")
    subprocess.run([cli, "convert", src, "--to", "wds", "--out", str(tmp_path / "out"),
                    "--shard-size", "2"], check=True, capture_output=True, timeout=120)
    subprocess.run([cli, "convert", src, "--to", "wds", "--out", f"s3://{BUCKET}/conv",
                    "--shard-size", "2"], check=True, capture_output=True, timeout=120)
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="conv/")["Contents"])
    assert keys == sorted(f"conv/{n}" for n in os.listdir(tmp_path / "out"))
    for k in keys:
        body = s3.get_object(Bucket=BUCKET, Key=k)["Body"].read()
        assert body == (tmp_path / "out" / k.split("/")[1]).read_bytes()
    r = subprocess.run([cli, "bench", "--data", f"s3://{BUCKET}/img", "--pipeline", "basic",
                        "--batch-size", "5", "--iters", "2"],
                       capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert r.returncode == 0, r.stderr


# ---- unreadable files under on_error="skip" at build ----

SKIP_SHARDS = 6  # skip/shard-{0..5}.tar, 3 samples each: ids 3*s .. 3*s+2


def write_id_shards(d):
    """Six small shards whose samples carry their id (a .cls member) and a few bytes."""
    os.makedirs(d, exist_ok=True)
    for s in range(SKIP_SHARDS):
        members = []
        for k in range(3 * s, 3 * s + 3):
            members += [(f"k{k:03d}.bin", bytes([k]) * (50 + k)), (f"k{k:03d}.cls", str(k).encode())]
        write_shard(os.path.join(d, f"shard-{s}.tar"), members, tarfile.GNU_FORMAT)
    return d


@pytest.fixture(scope="module")
def id_shards(s3, tmp_path_factory):
    d = write_id_shards(str(tmp_path_factory.mktemp("ids")))
    for s in range(SKIP_SHARDS):
        s3.upload_file(os.path.join(d, f"shard-{s}.tar"), BUCKET, f"skip/shard-{s}.tar")
    return d


def ids_by_epoch(paths, batch, epochs_, shard_id=0, num_shards=1, **kw):
    """The ids each epoch of one rank gives (a batch never crosses an epoch), and the
    pipeline."""
    def define():
        data, cls = fn.readers.webdataset(paths=paths, ext=["bin", "cls"], name="Reader",
                                          shard_id=shard_id, num_shards=num_shards, **kw)
        return data, cls
    pipe = stoker.pipeline_def(define, batch_size=batch, num_threads=2, seed=4,
                               on_error="skip")()
    out = []
    for _ in range(epochs_):
        ids = []
        while True:
            data, cls = pipe.run()
            for d, c in zip(data, cls):
                k = int(np.array(c).tobytes())
                assert np.array(d).tobytes() == bytes([k]) * (50 + k)  # the sample's own bytes
                ids.append(k)
            if pipe.last_batch_info()["ends_epoch"]:
                break
        out.append(ids)
    return out, pipe


GOOD_SHARDS = [0, 2, 4, 5]  # 1: 503 after every retry, 3: 403, 6: 404 (never written)
GOOD_IDS = sorted(k for s in GOOD_SHARDS for k in range(3 * s, 3 * s + 3))


@pytest.mark.parametrize("streaming", [False, True])
def test_unreadable_shards_are_left_out_at_build_under_skip(id_shards, proxy, streaming):
    """A shard whose reads fail after every retry (503), a forbidden one (403) and a
    missing one (404) are left out when the reader is built: counted, named, outside
    the epoch; the rest is sampled as ever: over two ranks, each epoch is every
    remaining sample exactly once."""
    port = proxy("ok", STK_PROXY_FAIL_GET="skip/shard-1.tar", STK_PROXY_FORBID="skip/shard-3.tar")
    paths = f"s3://{BUCKET}/skip/shard-{{0..6}}.tar"
    kw = dict(random_shuffle=True, streaming=streaming, initial_fill=4, remote_retries=1,
              remote_backoff_ms=1)
    seen = [[], []]
    for rank in (0, 1):
        per_epoch, pipe = ids_by_epoch(paths, 3, 2, shard_id=rank, num_shards=2, **kw)
        for e, ids in enumerate(per_epoch):
            seen[e] += ids
        assert pipe.epoch_size("Reader") == len(GOOD_IDS)
        stats = pipe.stats()
        assert stats["skipped_files"] == 3 and stats["skipped"] == 0
        why = "\n".join(stats["skipped_file_messages"])
        for shard, status in ((1, r"HTTP 503 \(SlowDown\)"), (3, "HTTP 403"),
                              (6, "HTTP 404")):
            assert re.search(rf"'s3://{BUCKET}/skip/shard-{shard}.tar'.*{status}", why), why
    for ids in seen:  # each epoch, both ranks together: a permutation of what is left
        assert sorted(ids) == GOOD_IDS
    assert proxy_stats(port)["doomed"] >= 2  # the 503 shard was tried, and retried


def test_unreadable_shard_fails_the_build_under_error_and_all_unreadable_fails(id_shards,
                                                                                 proxy):
    proxy("ok", STK_PROXY_FORBID="skip/shard-3.tar")
    paths = f"s3://{BUCKET}/skip/shard-{{2..4}}.tar"
    with pytest.raises(StokerError, match=r"shard-3\.tar.: HTTP 403"):
        epochs(wds(paths), 2, 1)
    with pytest.raises(NotFoundError, match=r"none of the 2 file\(s\).*shard-7.tar', .*shard-8"):
        epochs(wds(f"s3://{BUCKET}/skip/shard-{{7..8}}.tar"), 2, 1, on_error="skip")
    with pytest.raises(StokerError, match=r"none of the 1 file"):
        epochs(wds(f"s3://{BUCKET}/skip/shard-3.tar"), 2, 1, on_error="skip")


def test_local_and_tfrecord_files_are_left_out_the_same_way(tmp_path, dataset, s3):
    """The policy is the readers', not the remote layer's: a missing and a corrupt local
    shard are left out as remote ones are, and so is a TFRecord file."""
    d = write_id_shards(str(tmp_path / "ids"))
    with open(os.path.join(d, "shard-2.tar"), "r+b") as f:  # a member header's checksum
        f.seek(148)
        f.write(b"9999999\0")
    os.remove(os.path.join(d, "shard-4.tar"))
    (per_epoch,), pipe = ids_by_epoch(os.path.join(d, "shard-{0..5}.tar"), 4, 1)
    assert sorted(per_epoch) == sorted(k for s in (0, 1, 3, 5) for k in range(3 * s, 3 * s + 3))
    stats = pipe.stats()
    assert stats["skipped_files"] == 2
    why = "\n".join(stats["skipped_file_messages"])
    assert re.search(r"shard-2\.tar'.*not a tar archive", why), why
    assert re.search(r"shard-4\.tar'.*No such file", why), why
    with pytest.raises(NotFoundError, match="shard-4.tar"):  # under "error", as ever
        epochs(lambda: fn.readers.webdataset(paths=os.path.join(d, "shard-{0..5}.tar"),
                                             ext=["cls"]), 4, 1)
    with pytest.raises(StokerError, match="shard-2.tar' is not a tar archive"):
        epochs(lambda: fn.readers.webdataset(paths=os.path.join(d, "shard-{0..3}.tar"),
                                             ext=["cls"]), 4, 1)

    def tfr():
        out = fn.readers.tfrecord(path=f"s3://{BUCKET}/tfrec/part-{{0..2}}.tfrecord",
                                  index_path=f"s3://{BUCKET}/tfrec/part-{{0..2}}.idx",
                                  features=FEATURES, name="Reader")
        return out["label"]
    out, pipe = epochs(tfr, 6, 1, on_error="skip")
    assert sorted(int(np.frombuffer(s[:8], "<i8")[0]) for s in out[0][0]) == [0, 1, 2, 10, 11, 12]
    assert pipe.stats()["skipped_files"] == 1
    assert "part-2.tfrecord" in pipe.stats()["skipped_file_messages"][0]


# ---- remote settings as reader arguments ----

def test_remote_settings_arguments_override_the_environment(dataset, proxy, moto_port,
                                                           monkeypatch):
    """argument > environment variable > built-in default, for the retries (counted at
    the proxy) and for the endpoint (requests go where the argument says)."""
    port = proxy("ok", STK_PROXY_FAIL_GET="img/cats")
    url = f"s3://{BUCKET}/img/cats/{NAMES[0]}"

    def doomed_gets(**kw):
        before = proxy_stats(port).get("doomed", 0)
        with pytest.raises(StokerError, match="HTTP 503"):
            epochs(lambda: fn.readers.file(files=[url], **kw), 1, 1)
        return proxy_stats(port)["doomed"] - before

    monkeypatch.setenv("STK_REMOTE_BACKOFF_MS", "1")
    monkeypatch.delenv("STK_REMOTE_RETRIES", raising=False)
    assert doomed_gets() == 7  # the default: 6 retries
    monkeypatch.setenv("STK_REMOTE_RETRIES", "3")
    assert doomed_gets() == 4
    assert doomed_gets(remote_retries=1) == 2
    assert doomed_gets(remote_retries=0) == 1
    # the endpoint: the environment names the proxy, the argument the server behind it
    good = f"s3://{BUCKET}/img/dogs-and-more/{NAMES[2]}"
    before = proxy_stats(port)["ok"]
    out, _ = epochs(lambda: fn.readers.file(files=[good],
                                            remote_endpoint=f"http://127.0.0.1:{moto_port}"), 1, 1)
    assert out[0][0][0].startswith(photo(NAMES[2]))
    assert proxy_stats(port)["ok"] == before  # not one request through the proxy
    epochs(lambda: fn.readers.file(files=[good]), 1, 1)  # the environment's endpoint
    assert proxy_stats(port)["ok"] > before  # (batches made ahead read it again)


def test_region_and_endpoint_arguments_sign_and_route_requests(s3, monkeypatch):
    """The region signs the request (a server checking SigV4 for eu-central-1 refuses
    another); the endpoint argument routes it, whatever the environment names."""
    secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    proc, port = start_helper("sigv4", secret, "eu-central-1")
    try:
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        monkeypatch.setenv("AWS_REGION", "us-west-2")  # not the server's region
        kw = dict(files=["s3://bkt/dir/x.bin"], remote_endpoint=f"http://127.0.0.1:{port}",
                  remote_retries=0)
        with pytest.raises(StokerError, match=r"HTTP 403 \(SignatureDoesNotMatch\)"):
            epochs(lambda: fn.readers.file(**kw), 1, 1)
        out, _ = epochs(lambda: fn.readers.file(remote_region="eu-central-1", **kw), 1, 1)
        assert out[0][0][0].startswith(b"signed ok")
        # the listing of file_root goes there too (the server answers an empty one)
        with pytest.raises(NotFoundError, match="holds no matching object"):
            epochs(lambda: fn.readers.numpy(file_root="s3://bkt/dir", remote_region="eu-central-1",
                                            remote_endpoint=kw["remote_endpoint"]), 1, 1)
    finally:
        stop(proc)


def test_cache_settings_arguments_override_the_environment(dataset, monkeypatch, capfd):
    """The block cache's shape comes from remote_block_kb / remote_cache_mb before the
    environment: the build-time warning names the shape in force."""
    url = f"s3://{BUCKET}/wds/*.tar"
    kw = dict(streaming=True, random_shuffle=True, initial_fill=12, seed=5)
    local, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar"), **kw), 4, 2)
    monkeypatch.setenv("STK_REMOTE_BLOCK_KB", "64")
    monkeypatch.setenv("STK_REMOTE_CACHE_MB", "1")
    capfd.readouterr()
    epochs(wds(url, **kw), 4, 1)  # the environment's: 16 blocks of 64 KiB, too few
    assert "blocks of 64 KiB in use but the cache holds 16" in capfd.readouterr().err
    remote, _ = epochs(wds(url, remote_cache_mb=64, **kw), 4, 2)  # enough: no warning
    assert remote == local
    assert "remote_cache_mb" not in capfd.readouterr().err
    remote, _ = epochs(wds(url, remote_block_kb=128, remote_cache_mb=1, **kw), 4, 2)
    assert remote == local
    assert "blocks of 128 KiB in use but the cache holds 8" in capfd.readouterr().err
    monkeypatch.delenv("STK_REMOTE_BLOCK_KB")
    monkeypatch.delenv("STK_REMOTE_CACHE_MB")
    epochs(wds(url, remote_block_kb=64, remote_cache_mb=1, **kw), 4, 1)  # over the defaults
    assert "blocks of 64 KiB in use but the cache holds 16" in capfd.readouterr().err


# ---- brace patterns over HTTP and S3 ----

def test_brace_patterns_name_http_and_s3_shards(dataset, http_root, s3):
    """Ranges, alternatives and nested groups expand for URLs as for local paths (HTTP
    cannot be listed: a '*' there stays a literal character); index files too."""
    wds_dir = dataset / "wds"
    order = [0, 2, 1]
    local, _ = epochs(wds([str(wds_dir / f"shard-{s:06d}.tar") for s in order]), 4, 3)
    for base in (http_root, f"s3://{BUCKET}"):
        paths = [f"{base}/wds/shard-00000{{0,2}}.tar", f"{base}/wds/shard-{{000001..000001}}.tar"]
        remote, pipe = epochs(wds(paths), 4, 3)
        assert remote == local, base
        nested, _ = epochs(wds(f"{base}/wds/shard-00000{{0,{{2..1}}}}.tar"), 4, 3)
        assert nested == local, base
    # index files beside the shards on the HTTP server, named by a pattern as well
    os.makedirs(dataset / "wds-idx-http", exist_ok=True)
    upload_wds_indexes(dataset, s3)
    for s in range(3):
        body = s3.get_object(Bucket=BUCKET, Key=f"wds-idx/shard-{s:06d}.idx")["Body"].read()
        (dataset / "wds-idx-http" / f"shard-{s:06d}.idx").write_bytes(body)
    remote, _ = epochs(wds(f"{http_root}/wds/shard-{{000000..000002}}.tar",
                           index_paths=f"{http_root}/wds-idx-http/shard-{{000000..000002}}.idx"),
                       4, 3)
    in_order, _ = epochs(wds(str(wds_dir / "shard-{000000..000002}.tar")), 4, 3)
    assert remote == in_order
    with pytest.raises(NotFoundError, match=r"wds/\*\.tar.*404"):
        epochs(wds(f"{http_root}/wds/*.tar"), 1, 1)


def test_a_range_past_the_last_shard_and_a_failed_listing_are_left_out_under_skip(
        dataset, http_root):
    """A range written wider than the shards there are (HTTP: 404s), and an s3:// glob
    whose listing matches nothing, are left out under on_error="skip"."""
    in_order, _ = epochs(wds(str(dataset / "wds" / "shard-{000000..000002}.tar")), 4, 3)
    remote, pipe = epochs(wds(f"{http_root}/wds/shard-{{000000..000004}}.tar"), 4, 3,
                          on_error="skip")
    assert remote == in_order and pipe.epoch_size("Reader") == 12
    assert pipe.stats()["skipped_files"] == 2
    remote, pipe = epochs(wds([f"s3://{BUCKET}/wds/*.tar", f"s3://{BUCKET}/nothing/*.tar"]), 4, 3,
                          on_error="skip")
    assert remote == in_order
    assert "nothing/*.tar" in pipe.stats()["skipped_file_messages"][0]
    with pytest.raises(NotFoundError, match="every pattern was left out"):
        epochs(wds(f"s3://{BUCKET}/nothing/*.tar"), 4, 1, on_error="skip")


def test_files_gone_when_read_are_skipped_samples(dataset, http_root, tmp_path):
    """readers.file and readers.numpy read their files as samples: one that is gone (a
    404, a deleted local file) is a bad sample, skipped and counted under
    on_error="skip", and an error naming it otherwise."""
    names = ["cats/" + NAMES[0], "cats/gone.jpg", "dogs-and-more/" + NAMES[3]]
    local_root = tmp_path / "img"
    shutil.copytree(dataset / "img", local_root)
    for root in (f"{http_root}/img", f"s3://{BUCKET}/img", str(local_root)):
        out, pipe = epochs(lambda: fn.readers.file(file_root=root, files=names, name="Reader"),
                           2, 1, on_error="skip")
        got = out[0][0]
        assert len(got) == 2 and got[0].startswith(photo(NAMES[0]))
        assert got[1].startswith(photo(NAMES[3]))
        assert pipe.stats()["skipped"] == 1, root
        assert "cats/gone.jpg" in pipe.stats()["skipped_samples"][0]
        with pytest.raises(NotFoundError, match="gone.jpg"):
            epochs(lambda: fn.readers.file(file_root=root, files=names), 2, 1)
    arrays = [f"{http_root}/npy/g0/a0.npy", f"{http_root}/npy/g0/nope.npy"]
    out, pipe = epochs(lambda: fn.readers.numpy(files=arrays), 2, 1, on_error="skip")
    want = np.load(dataset / "npy" / "g0" / "a0.npy")
    assert out[0][0][0] == want.tobytes() + str(want.shape).encode()
    assert pipe.stats()["skipped"] == 1


def test_bad_remote_settings_are_refused_naming_the_argument():
    from stoker.errors import InvalidArgumentError
    for kw, arg in ((dict(remote_retries=101), "remote_retries"),
                    (dict(remote_timeout=0), "remote_timeout"),
                    (dict(remote_block_kb=2), "remote_block_kb")):
        with pytest.raises(InvalidArgumentError, match=arg):
            epochs(wds("s3://b/shard-{0..1}.tar", **kw), 1, 1)
    with pytest.raises(StokerError, match="remote_cache_mb"):  # the file readers have none
        epochs(lambda: fn.readers.file(files=["s3://b/x"], remote_cache_mb=4), 1, 1)
