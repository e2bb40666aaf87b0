"""TRex ASTF profile: HTTP/1.1, one request per connection, through Arion.

Measures connections per second: each TRex client connection sends one GET
with `Connection: close` and reads the response; Arion opens (or reuses) an
upstream connection to TRex's server side (48.0.0.0/16:8080 in
bench/trex/arion-trex.yaml) and closes the client connection after the
response, as HTTP/1.1 requires.

  ./t-rex-64 --astf -f arion_http_close.py -m 20000 -d 60 -t vip=198.18.0.2

Tunables: vip (default 198.18.0.2), port (80), size (response body, 64),
extra (bytes Arion adds to each request upstream, 6) and rextra (to each
response, 19); see arion_http_keepalive.py. With bench/trex/arion-trex.yaml
Arion adds "x-forwarded-proto: http\r\n" (25 bytes) to the request and
drops its hop-by-hop "Connection: close\r\n" (19), and adds
"connection: close\r\n" (19) to the response: tests/http checks these
counts against Arion's own parser, edits and serializer (test_http_proxy,
trex_astf_byte_counts).
"""

from trex.astf.api import *


class ArionClose(object):
    def get_profile(self, tunables, **kwargs):
        params = {}
        for t in tunables or []:
            k, _, v = t.partition('=')
            params[k] = v
        vip = params.get('vip', '198.18.0.2')
        port = int(params.get('port', '80'))
        size = int(params.get('size', '64'))
        extra = int(params.get('extra', '6'))
        rextra = int(params.get('rextra', '19'))
        req = ('GET /bench HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n'
               'User-Agent: trex-astf\r\n\r\n' % vip)
        resp = ('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n'
                'Content-Length: %d\r\n\r\n' % size) + ('x' * size)

        prog_c = ASTFProgram(stream=True)
        prog_c.send(req)
        prog_c.recv(len(resp) + rextra)
        prog_c.wait_for_peer_close()

        # Arion keeps upstream connections alive: answer every request that
        # arrives on one, until Arion closes it.
        prog_s = ASTFProgram(stream=True)
        prog_s.set_var('n', 1000000)
        prog_s.set_label('again:')
        prog_s.recv(len(req) + extra, True)
        prog_s.send(resp)
        prog_s.jmp_nz('n', 'again:')
        prog_s.wait_for_peer_close()

        ip_gen_c = ASTFIPGenDist(ip_range=['16.0.0.1', '16.0.255.254'], distribution='seq')
        ip_gen_s = ASTFIPGenDist(ip_range=[vip, vip], distribution='seq')
        ip_gen = ASTFIPGen(glob=ASTFIPGenGlobal(ip_offset='1.0.0.0'),
                           dist_client=ip_gen_c, dist_server=ip_gen_s)
        temp_c = ASTFTCPClientTemplate(program=prog_c, ip_gen=ip_gen, port=port)
        temp_s = ASTFTCPServerTemplate(program=prog_s, assoc=ASTFAssociationRule(port=8080))
        return ASTFProfile(default_ip_gen=ip_gen,
                           templates=ASTFTemplate(client_template=temp_c,
                                                  server_template=temp_s))


def register():
    return ArionClose()
