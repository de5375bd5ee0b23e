#!/usr/bin/env python3
"""Checks our Perfetto proto subset against the official Perfetto schema.

Usage: python3 tests/official_schema.py SUBSET.fds

SUBSET.fds is the serialized FileDescriptorSet that build.rs compiles from
proto/perfetto_trace.proto. Every message (nested ones included), field, enum
and enum value in it must exist in the official schema shipped by the PyPI
package `perfetto`, with the same number, name, type, label, referenced type,
packedness and oneof membership. Prints one line per mismatch and exits 1 on
any; prints a one-line summary and exits 0 otherwise.
"""

import sys

from google.protobuf import descriptor_pb2

try:
    from importlib.metadata import version as _dist_version
except ImportError:  # pragma: no cover - Python < 3.8
    _dist_version = None

from perfetto.protos.perfetto.trace import perfetto_trace_pb2

FDP = descriptor_pb2.FieldDescriptorProto


def enum_name(enum_type, value):
    try:
        return enum_type.Name(value)
    except ValueError:
        return str(value)


def label_name(value):
    return enum_name(FDP.Label, value)


def type_name(value):
    return enum_name(FDP.Type, value)


def strip_dot(name):
    return name[1:] if name.startswith(".") else name


def oneof_of(message_proto, field_proto):
    """The name of the (non-synthetic) oneof the field belongs to, or None."""
    if not field_proto.HasField("oneof_index"):
        return None
    if field_proto.proto3_optional:
        return None
    return message_proto.oneof_decl[field_proto.oneof_index].name


def packed_of(field_proto):
    if field_proto.options.HasField("packed"):
        return field_proto.options.packed
    return None


class Checker:
    def __init__(self, pool):
        self.pool = pool
        self.mismatches = []
        self.messages = 0
        self.fields = 0
        self.enums = 0
        self.enum_values = 0

    def fail(self, line):
        self.mismatches.append(line)

    def official_message(self, full_name):
        try:
            descriptor = self.pool.FindMessageTypeByName(full_name)
        except KeyError:
            return None
        proto = descriptor_pb2.DescriptorProto()
        descriptor.CopyToProto(proto)
        return proto

    def official_enum(self, full_name):
        try:
            descriptor = self.pool.FindEnumTypeByName(full_name)
        except KeyError:
            return None
        proto = descriptor_pb2.EnumDescriptorProto()
        descriptor.CopyToProto(proto)
        return proto

    def check_enum(self, full_name, ours):
        self.enums += 1
        official = self.official_enum(full_name)
        if official is None:
            self.fail(f"enum {full_name}: not in the official schema")
            return
        by_name = {v.name: v for v in official.value}
        for value in ours.value:
            self.enum_values += 1
            theirs = by_name.get(value.name)
            if theirs is None:
                self.fail(
                    f"enum value {full_name}.{value.name} = {value.number}: "
                    "not in the official schema"
                )
            elif theirs.number != value.number:
                self.fail(
                    f"enum value {full_name}.{value.name}: number {value.number}, "
                    f"official {theirs.number}"
                )

    def check_message(self, full_name, ours):
        self.messages += 1
        official = self.official_message(full_name)
        if official is None:
            self.fail(f"message {full_name}: not in the official schema")
        else:
            self.check_fields(full_name, ours, official)
        for nested in ours.nested_type:
            self.check_message(f"{full_name}.{nested.name}", nested)
        for enum in ours.enum_type:
            self.check_enum(f"{full_name}.{enum.name}", enum)

    def check_fields(self, message_name, ours, official):
        by_number = {f.number: f for f in official.field}
        by_name = {f.name: f for f in official.field}
        for field in ours.field:
            self.fields += 1
            where = f"field {message_name}.{field.name} = {field.number}"
            theirs = by_number.get(field.number)
            if theirs is None:
                other = by_name.get(field.name)
                hint = f" (official number is {other.number})" if other else ""
                self.fail(f"{where}: number not in the official message{hint}")
                continue
            if theirs.name != field.name:
                self.fail(f"{where}: official name is {theirs.name!r}")
            if theirs.type != field.type:
                self.fail(
                    f"{where}: type {type_name(field.type)}, "
                    f"official {type_name(theirs.type)}"
                )
            if theirs.label != field.label:
                self.fail(
                    f"{where}: label {label_name(field.label)}, "
                    f"official {label_name(theirs.label)}"
                )
            ours_ref = strip_dot(field.type_name)
            theirs_ref = strip_dot(theirs.type_name)
            if ours_ref != theirs_ref:
                self.fail(
                    f"{where}: references {ours_ref or '-'}, "
                    f"official {theirs_ref or '-'}"
                )
            ours_oneof = oneof_of(ours, field)
            theirs_oneof = oneof_of(official, theirs)
            if ours_oneof != theirs_oneof:
                self.fail(
                    f"{where}: oneof {ours_oneof or '-'}, "
                    f"official oneof {theirs_oneof or '-'}"
                )
            if packed_of(field) != packed_of(theirs):
                self.fail(
                    f"{where}: packed {packed_of(field)}, "
                    f"official packed {packed_of(theirs)}"
                )


def perfetto_version():
    if _dist_version is not None:
        try:
            return _dist_version("perfetto")
        except Exception:  # noqa: BLE001 - best effort only
            pass
    return "unknown version"


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} SUBSET.fds", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())

    checker = Checker(perfetto_trace_pb2.DESCRIPTOR.pool)
    if not fds.file:
        checker.fail(f"{argv[1]}: the descriptor set holds no files")
    for file in fds.file:
        prefix = f"{file.package}." if file.package else ""
        for message in file.message_type:
            checker.check_message(prefix + message.name, message)
        for enum in file.enum_type:
            checker.check_enum(prefix + enum.name, enum)

    for line in checker.mismatches:
        print(line)
    if checker.mismatches:
        print(
            f"schema: {len(checker.mismatches)} mismatch(es) with the official "
            f"Perfetto schema (perfetto {perfetto_version()})"
        )
        return 1
    print(
        f"schema: {checker.messages} messages, {checker.fields} fields, "
        f"{checker.enums} enums, {checker.enum_values} enum values match the "
        f"official Perfetto schema (perfetto {perfetto_version()})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
