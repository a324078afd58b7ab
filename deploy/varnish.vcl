# Varnish in front of quire, purged by surrogate key (docs/deploy.md).
#
# quire names what each response depends on in Surrogate-Key; this copies
# it to xkey (vmod xkey, Debian's varnish-modules) and answers the PURGE
# requests quire sends when a snapshot goes live (quire.yml:
# purge: [{varnish: http://127.0.0.1:6081}]) by purging those keys.
# tests/test-varnish.py runs this file as it is, with its backend's port
# replaced.
vcl 4.1;

import std;
import xkey;

backend quire {
	.host = "127.0.0.1";
	.port = "8080";
}

# who may purge: quire's own address
acl purgers {
	"127.0.0.1";
	"::1";
}

sub vcl_recv {
	if (req.method == "PURGE") {
		if (client.ip !~ purgers) {
			return (synth(403, "Forbidden"));
		}
		if (req.http.xkey-purge) {
			set req.http.n-gone = xkey.purge(req.http.xkey-purge);
			return (synth(200, "Purged " + req.http.n-gone));
		}
		# method: purge in quire.yml: one URL (and its Host) at a time
		return (purge);
	}
	if (req.method == "BAN") {
		# method: ban in quire.yml, for a Varnish without vmod xkey (drop
		# the import and the xkey-purge branch): the objects whose keys
		# match quire's regular expression (it holds no space) are banned
		if (client.ip !~ purgers || !req.http.quire-ban) {
			return (synth(403, "Forbidden"));
		}
		if (!std.ban("obj.http.Surrogate-Key ~ " + req.http.quire-ban)) {
			return (synth(400, std.ban_error()));
		}
		return (synth(200, "Banned"));
	}
	# the sync API, search and metrics are answered by quire every time;
	# live pages' streams (/_quire/live) are never cached, and pass streams
	# them as quire writes them (beresp.do_stream; quire's heartbeat every
	# 15 s stays within between_bytes_timeout; send_timeout ends a stream
	# after 600 s, and the browser opens it again)
	if (req.url ~ "^/(api|metrics|healthz|_quire/live)(/|\?|$)") {
		return (pass);
	}
}

sub vcl_backend_response {
	if (beresp.http.Surrogate-Key) {
		set beresp.http.xkey = beresp.http.Surrogate-Key;
	}
}

sub vcl_deliver {
	if (obj.hits > 0) {
		set resp.http.X-Cache = "HIT";
	} else {
		set resp.http.X-Cache = "MISS";
	}
	unset resp.http.xkey;
}
