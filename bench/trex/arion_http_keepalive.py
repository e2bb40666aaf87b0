"""TRex ASTF profile: HTTP/1.1 keep-alive through Arion.

TRex plays both ends: its client side opens connections to Arion's
listener (the VIP), sends `requests` GETs per connection and reads each
response; Arion proxies them to TRex's server side (the upstream cluster's
endpoints, 48.0.0.0/16 here, port 8080), which answers each with a small
200. Arion is the DUT between TRex's two ports (see docs/benchmarks/hardware.md
and bench/trex/arion-trex.yaml for Arion's side).

  ./t-rex-64 --astf -f arion_http_keepalive.py -m 1000 -d 60 \
      -t vip=198.18.0.2,requests=100

Tunables (-t key=value,...):
  vip       Arion's listener address (default 198.18.0.2)
  port      Arion's listener port (default 80)
  requests  requests per connection (default 100)
  size      response body bytes (default 64)
  extra     bytes Arion adds to each request on its way upstream (default 25:
            "x-forwarded-proto: http\r\n" with bench/trex/arion-trex.yaml)
  rextra    bytes Arion adds to each response (default 0 with arion-trex.yaml,
            which passes the upstream's Server header through and asks the
            router to suppress x-envoy-* headers); see docs/benchmarks/hardware.md
"""

from trex.astf.api import *


def _request(vip):
    return ('GET /bench HTTP/1.1\r\n'
            'Host: %s\r\n'
            'User-Agent: trex-astf\r\n'
            'Accept: */*\r\n'
            '\r\n' % vip)


def _response(size):
    return ('HTTP/1.1 200 OK\r\n'
            'Content-Type: text/plain\r\n'
            'Content-Length: %d\r\n'
            '\r\n' % size) + ('x' * size)


class ArionKeepAlive(object):
    def get_profile(self, tunables, **kwargs):
        params = {}
        for t in tunables or []:
            k, _, v = t.partition('=')
            params[k] = v
        vip = params.get('vip', '198.18.0.2')
        port = int(params.get('port', '80'))
        requests = int(params.get('requests', '100'))
        size = int(params.get('size', '64'))
        extra = int(params.get('extra', '25'))
        rextra = int(params.get('rextra', '0'))
        req = _request(vip)
        resp = _response(size)

        # ASTF programs wait for byte counts. Arion adds request headers on
        # the way to the upstream (with bench/trex/arion-trex.yaml: only
        # "x-forwarded-proto: http", 25 bytes), so the server side waits for
        # len(request) + extra; responses pass through unchanged in size
        # when the upstream's headers need no rewriting. Check `extra` once
        # with tcpdump on the upstream side if you change Arion's config.
        prog_c = ASTFProgram(stream=True)
        prog_c.set_var('n', requests)
        prog_c.set_label('again:')
        prog_c.send(req)
        prog_c.recv(len(resp) + rextra, True)
        prog_c.jmp_nz('n', 'again:')
        prog_c.reset()

        prog_s = ASTFProgram(stream=True)
        prog_s.set_var('n', requests)
        prog_s.set_label('again:')
        prog_s.recv(len(req) + extra, True)
        prog_s.send(resp)
        prog_s.jmp_nz('n', 'again:')
        prog_s.wait_for_peer_close()

        ip_gen_c = ASTFIPGenDist(ip_range=['16.0.0.1', '16.0.255.254'], distribution='seq')
        ip_gen_s = ASTFIPGenDist(ip_range=[vip, vip], distribution='seq')
        ip_gen = ASTFIPGen(glob=ASTFIPGenGlobal(ip_offset='1.0.0.0'),
                           dist_client=ip_gen_c, dist_server=ip_gen_s)

        info = ASTFGlobalInfo()
        info.tcp.mss = 1460
        info.tcp.initwnd = 10

        temp_c = ASTFTCPClientTemplate(program=prog_c, ip_gen=ip_gen, port=port)
        # The server side answers Arion's upstream connections on 8080.
        temp_s = ASTFTCPServerTemplate(program=prog_s, assoc=ASTFAssociationRule(port=8080))
        return ASTFProfile(default_ip_gen=ip_gen, default_c_glob_info=info,
                           default_s_glob_info=info,
                           templates=ASTFTemplate(client_template=temp_c,
                                                  server_template=temp_s))


def register():
    return ArionKeepAlive()
