"""vmplane's record values in Python: Avro single-object encoding of the schemas in schemas/avro.

A value on every vmplane topic is `C3 01`, the 8-byte little-endian CRC-64-AVRO (Rabin)
fingerprint of the writer's schema in Parsing Canonical Form, then the Avro binary body
(docs/design.md §4). python3-avro 1.11 writes the canonical form but has no fingerprint, so the
fingerprint is computed here as the Avro specification defines it. The Kafka record also carries
a `type` header with the record name, which must agree with the value.

Today's schemas (schemas/avro/<Type>.avsc) are the ones written and read; the older versions in
schemas/avro/history are known by their fingerprints so that a record an older control plane
wrote is read into today's fields, the new ones taking their defaults.

The Confluent framing (00 + a 4-byte schema id, used when the control plane has a Schema
Registry) is recognised but not decoded: this example has no registry client.
"""

import copy
import glob
import io
import os

import avro.errors
import avro.io
import avro.schema

# CRC-64-AVRO, from the Avro specification ("Schema Fingerprints").
_EMPTY = 0xC15D213AA4D7A795


def _table():
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY & -(fp & 1))
        table.append(fp)
    return table


_TABLE = _table()


def rabin(data):
    """The CRC-64-AVRO fingerprint of data (bytes)."""
    fp = _EMPTY
    for b in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ b) & 0xFF]
    return fp


def fingerprint(schema):
    """The fingerprint of a parsed schema: Rabin of its Parsing Canonical Form."""
    return rabin(schema.canonical_form.encode("utf-8"))


MAGIC = b"\xc3\x01"


class DecodeError(Exception):
    """A value that cannot be read: not vmplane's framing, an unknown schema, a bad body."""


class Codec:
    """Encodes and decodes vmplane records by record name (= the `type` header)."""

    def __init__(self, schema_dir):
        self.schemas = {}  # record name -> today's schema
        self.writers = {}  # fingerprint -> (record name, writer schema)
        current = sorted(glob.glob(os.path.join(schema_dir, "*.avsc")))
        if not current:
            raise FileNotFoundError(f"no .avsc files in {schema_dir}")
        for path in current:
            s = avro.schema.parse(_read(path))
            self.schemas[s.name] = s
            self.writers[fingerprint(s)] = (s.name, s)
        for path in sorted(glob.glob(os.path.join(schema_dir, "history", "*.avsc"))):
            s = avro.schema.parse(_read(path))
            if s.name in self.schemas:
                self.writers.setdefault(fingerprint(s), (s.name, s))

    def record(self, record_name, /, **fields):
        """A complete value of record_name: fields given, every other field its default.

        Every field of a vmplane schema has a default (its zero value); python3-avro writes
        only complete records, and an unknown field name is a bug, not something to drop.
        """
        schema = self.schemas[record_name]
        unknown = set(fields) - {f.name for f in schema.fields}
        if unknown:
            raise KeyError(f"{record_name} has no field {sorted(unknown)}")
        value = {f.name: copy.deepcopy(f.default) for f in schema.fields}
        value.update(fields)
        return value

    def encode(self, name, value):
        """Single-object encoding of value as record name."""
        schema = self.schemas[name]
        buf = io.BytesIO()
        buf.write(MAGIC)
        buf.write(fingerprint(schema).to_bytes(8, "little"))
        avro.io.DatumWriter(schema).write(value, avro.io.BinaryEncoder(buf))
        return buf.getvalue()

    def decode(self, data):
        """(record name, value) of a single-object encoded value; DecodeError otherwise."""
        if data is None or len(data) == 0:
            raise DecodeError("empty value")
        if data[0] == 0:
            raise DecodeError("Confluent framing (schema registry): not supported by this example")
        if len(data) < 10 or data[:2] != MAGIC:
            raise DecodeError("not Avro single-object encoding")
        fp = int.from_bytes(data[2:10], "little")
        if fp not in self.writers:
            raise DecodeError(f"unknown schema fingerprint {data[2:10].hex()}")
        name, writer = self.writers[fp]
        body = io.BytesIO(data[10:])
        try:
            value = avro.io.DatumReader(writer, self.schemas[name]).read(avro.io.BinaryDecoder(body))
        except (avro.errors.AvroException, ValueError, TypeError, IndexError, EOFError) as e:
            raise DecodeError(f"decode {name}: {e}") from e
        if body.tell() != len(data) - 10:
            raise DecodeError(f"decode {name}: {len(data) - 10 - body.tell()} trailing bytes")
        return name, value


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()
