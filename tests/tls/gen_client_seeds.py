#!/usr/bin/env python3
"""Seeds for fuzz_client_first_flight: real servers' first flights.

Python's ssl (OpenSSL) plays a server with a certificate for up.test,
answers a ClientHello of its own client over memory BIOs, and the
server's bytes are written behind each mode byte of the fuzzer (plain /
validating client, cuts, session slot). Run it again to remake
tests/tls/corpus/client_first_flight.
usage: gen_client_seeds.py OUTDIR
"""
import os
import ssl
import subprocess
import sys
import tempfile


def flight(cert, key, version):
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    sctx.minimum_version = sctx.maximum_version = version
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    cctx.set_alpn_protocols(["http/1.1"])
    cin, cout, sin, sout = (ssl.MemoryBIO() for _ in range(4))
    c = cctx.wrap_bio(cin, cout, server_hostname="up.test")
    s = sctx.wrap_bio(sin, sout, server_side=True)
    try:
        c.do_handshake()
    except ssl.SSLWantReadError:
        pass
    sin.write(cout.read())
    try:
        s.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return sout.read()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-subj", "/CN=up.test", "-addext", "subjectAltName=DNS:up.test",
                        "-days", "3650"], check=True, capture_output=True)
        for name, v in (("tls13", ssl.TLSVersion.TLSv1_3), ("tls12", ssl.TLSVersion.TLSv1_2)):
            f = flight(cert, key, v)
            for mode in (0, 1, 3, 9):
                with open(os.path.join(out, f"{name}_m{mode}"), "wb") as o:
                    o.write(bytes([mode]) + f)


if __name__ == "__main__":
    main()
