"""Kafka requests the benchmark harness sends itself, v0 on the wire (every broker here answers
v0; the clients it runs do not wrap these): ApiVersions, to see what a broker serves, and
AlterClientQuotas and DescribeClientQuotas, to put a client quota on a scenario's clients
(`kafka-configs --alter --entity-type clients`). Python 3 stdlib only.
"""

import socket
import struct
import time

API_VERSIONS, DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 18, 48, 49


def string(s):
    """A (nullable) STRING: int16 length (-1 for null), then UTF-8."""
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request(bootstrap, api_key, body, timeout_s=5):
    """Sends one v0 request (header v1, client id "samsa-bench") and returns the response body
    after its correlation id, or None when the broker cannot be asked."""
    host, port = bootstrap.rsplit(":", 1)
    frame = struct.pack(">hhi", api_key, 0, 1) + string("samsa-bench") + body
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                data += chunk
    except OSError:
        return None
    return data[8:]


def advertised_api_keys(bootstrap):
    """The api keys a broker advertises, from an ApiVersions v0 request, or None when it cannot
    be asked."""
    data = request(bootstrap, API_VERSIONS, b"")
    if data is None:
        return None
    # error code, array of (api_key, min, max)
    error, count = struct.unpack(">hi", data[:6])
    if error != 0:
        return None
    return {struct.unpack(">h", data[6 + 6 * i:8 + 6 * i])[0] for i in range(count)}


def entity_bytes(client_id):
    """The entity of one client id (None: the default client id, `--entity-default`)."""
    return struct.pack(">i", 1) + string("client-id") + string(client_id)


def set_client_quota(bootstrap, client_id, key, value, timeout_s=10):
    """Sets `key` (e.g. producer_byte_rate) of the client-id entity `client_id` and waits until
    the broker describes it: None, or why it could not (a status for the results table)."""
    body = (struct.pack(">i", 1) + entity_bytes(client_id)
            + struct.pack(">i", 1) + string(key) + struct.pack(">db", value, 0)
            + struct.pack(">b", 0))
    data = request(bootstrap, ALTER_CLIENT_QUOTAS, body)
    if data is None:
        return "failed:AlterClientQuotas-unanswered"
    # throttle_time_ms, entries (1), error_code
    error = struct.unpack(">h", data[8:10])[0]
    if error != 0:
        return f"failed:AlterClientQuotas-error-{error}"
    # DescribeClientQuotas: one component, client-id matched exactly (0) or the default (1).
    match = struct.pack(">b", 0) + string(client_id) if client_id is not None else \
        struct.pack(">b", 1) + string(None)
    describe = struct.pack(">i", 1) + string("client-id") + match + struct.pack(">b", 1)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        data = request(bootstrap, DESCRIBE_CLIENT_QUOTAS, describe)
        # throttle_time_ms, error_code, error_message, entries: found when the key is there
        if data is not None and struct.unpack(">h", data[4:6])[0] == 0 \
                and string(key) + struct.pack(">d", value) in data:
            return None
        time.sleep(0.05)
    return "failed:quota-not-described"
