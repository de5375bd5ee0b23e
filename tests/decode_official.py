#!/usr/bin/env python3
"""Decodes a trace written by nsys2perfetto with the official Perfetto schema.

Usage: python3 tests/decode_official.py TRACE

TRACE is a Perfetto trace, raw or gzipped (several concatenated gzip members
are accepted). It is parsed as `perfetto.protos.Trace` from the PyPI package
`perfetto`, and a JSON object with packet statistics is printed to stdout.
Exits 1 if the trace does not parse or if any message in it has fields the
official schema does not know (which would mean we wrote a wrong field number).
"""

import gzip
import json
import sys
from collections import Counter

from google.protobuf import descriptor as _descriptor
from perfetto.protos.perfetto.trace import perfetto_trace_pb2

try:
    from google.protobuf import unknown_fields as _unknown_fields
except ImportError:  # older protobuf: Message.UnknownFields() instead
    _unknown_fields = None

GZIP_MAGIC = b"\x1f\x8b"
TYPE_MESSAGE = _descriptor.FieldDescriptor.TYPE_MESSAGE
TYPE_GROUP = _descriptor.FieldDescriptor.TYPE_GROUP


def unknown_field_count(message):
    if _unknown_fields is not None:
        return len(_unknown_fields.UnknownFieldSet(message))
    return len(message.UnknownFields())


def is_repeated(field):
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == _descriptor.FieldDescriptor.LABEL_REPEATED


def walk(message, path, found):
    """Appends the paths of messages with unknown fields under `message`."""
    if unknown_field_count(message):
        found.append(path)
    for field, value in message.ListFields():
        if field.type not in (TYPE_MESSAGE, TYPE_GROUP):
            continue
        if field.message_type.GetOptions().map_entry:
            # Map values: only message-valued maps hold submessages.
            value_field = field.message_type.fields_by_name["value"]
            if value_field.type == TYPE_MESSAGE:
                for key, item in value.items():
                    walk(item, f"{path}.{field.name}[{key!r}]", found)
        elif is_repeated(field):
            for i, item in enumerate(value):
                walk(item, f"{path}.{field.name}[{i}]", found)
        else:
            walk(value, f"{path}.{field.name}", found)


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} TRACE", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    try:
        if data.startswith(GZIP_MAGIC):
            data = gzip.decompress(data)
        trace = perfetto_trace_pb2.Trace()
        trace.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 - any failure means "does not decode"
        print(f"error: {argv[1]}: does not decode as perfetto.protos.Trace: {e}",
              file=sys.stderr)
        return 1

    event_types = Counter()
    track_descriptors = 0
    interned_data = 0
    sequences = set()
    flow_ids = 0
    terminating_flow_ids = 0
    unknown = []
    for i, packet in enumerate(trace.packet):
        walk(packet, f"packet[{i}]", unknown)
        if packet.HasField("track_event"):
            event = packet.track_event
            event_types[perfetto_trace_pb2.TrackEvent.Type.Name(event.type)] += 1
            flow_ids += len(event.flow_ids)
            terminating_flow_ids += len(event.terminating_flow_ids)
        if packet.HasField("track_descriptor"):
            track_descriptors += 1
        if packet.HasField("interned_data"):
            interned_data += 1
        if packet.HasField("trusted_packet_sequence_id"):
            sequences.add(packet.trusted_packet_sequence_id)

    result = {
        "packets": len(trace.packet),
        "track_events": {
            name.removeprefix("TYPE_"): count
            for name, count in sorted(event_types.items())
        },
        "track_descriptors": track_descriptors,
        "interned_data_packets": interned_data,
        "sequences": len(sequences),
        "flow_ids": flow_ids,
        "terminating_flow_ids": terminating_flow_ids,
        "unknown_fields": len(unknown),
    }
    for key in ("SLICE_BEGIN", "SLICE_END", "INSTANT"):
        result["track_events"].setdefault(key, 0)
    print(json.dumps(result, sort_keys=True))
    for path in unknown[:20]:
        print(f"error: {path} has fields unknown to the official schema",
              file=sys.stderr)
    if unknown:
        print(f"error: {len(unknown)} message(s) have unknown fields",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
