"""moto's DynamoDB-API server, with one change: a transaction backs up the items it names,
not whole tables.

moto's TransactWriteItems deep-copies every table a transaction touches, once per action, so
that it can roll back (moto 5.2.5, moto/dynamodb/models/__init__.py): a write transaction
cost ~0.9 s on a 4,000-item table here, and the tests' worlds hold tens of thousands. Here the
copy of a table is the table itself, and the items the transaction names are saved before it
runs and put back if it fails — the same all-or-nothing outcome. Everything else is moto's.

    python server.py -H 127.0.0.1 -p PORT
"""
import copy
import sys

import moto.dynamodb.models as models
import moto.server
from moto.dynamodb.models.table import Table


class _TablesUncopied:
    """`copy` as moto's DynamoDB backend sees it: a table is not copied."""

    @staticmethod
    def deepcopy(value, memo=None):
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


models.copy = _TablesUncopied
_transact_write_items = models.DynamoDBBackend.transact_write_items


def _key_of(backend, op_type, op):
    table = backend.get_table(op["TableName"])
    source = op["Item"] if op_type == "Put" else op["Key"]
    return {a: source[a] for a in (table.hash_key_attr, table.range_key_attr) if a}


def transact_write_items(self, transact_items):
    saved = []
    for entry in transact_items:
        try:
            op_type, op = next(iter(entry.items()))
            key = _key_of(self, op_type, op)
            before = self.get_item(op["TableName"], key)
            attrs = None if before is None else copy.deepcopy(before.to_json()["Attributes"])
            saved.append((op["TableName"], key, attrs))
        except Exception:
            pass  # moto's own pass reports what is wrong with this action
    try:
        _transact_write_items(self, transact_items)
    except Exception:
        for table_name, key, attrs in reversed(saved):
            if attrs is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, attrs)
        raise


models.DynamoDBBackend.transact_write_items = transact_write_items

if __name__ == "__main__":
    moto.server.main(sys.argv[1:])
