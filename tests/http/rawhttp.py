"""Raw HTTP/1.x for the end-to-end tests: bytes out, every byte back.

The tests send Arion bytes that curl will not (smuggling attempts, long
pipelines, heads split across segments), so they speak through a socket,
not an HTTP library. tests/http/e2e_lib.sh puts this directory on
PYTHONPATH, so a test's inline script can `import rawhttp`.
"""
import socket


def connect(host, port=80, timeout=5):
    return socket.create_connection((host, port), timeout=timeout)


def read_until_close(s):
    """Every byte the peer sends until it closes. Returns (data, closed):
    closed is False when the timeout came first, with what arrived so far."""
    d = b""
    try:
        while True:
            r = s.recv(65536)
            if not r:
                return d, True
            d += r
    except socket.timeout:
        return d, False


def exchange(host, data, port=80, timeout=5):
    """Connect, send data, and return (reply, closed) as read_until_close."""
    with connect(host, port, timeout) as s:
        s.sendall(data)
        return read_until_close(s)
