"""A Jupyter kernel driven as a notebook would drive it, for the tests of
%%bindthem: tests/api/test_notebook.py (the magic, the display, the example
notebook) and tests/services/test_on_demand.py (instantiation on demand from a
cell). nbclient and jupyter_client are imported inside the functions, so
that a test that skips without them can still import this module.
"""

import re

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TIMEOUT = 300


def notebook_client(nb, kernel_dir, cwd):
    """An nbclient client for notebook nb, its kernel the kernelspec
    "bindthem-test" in kernel_dir, run in folder cwd."""
    import jupyter_client
    import nbclient
    from jupyter_client.kernelspec import KernelSpecManager

    km = jupyter_client.KernelManager(
        kernel_name="bindthem-test",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernel_dir]))
    return nbclient.NotebookClient(nb, km=km, timeout=TIMEOUT, allow_errors=True,
                                   resources={"metadata": {"path": str(cwd)}})


class Session:
    """One kernel; run() executes a new cell in it, as a notebook would."""

    def __init__(self, client):
        self.client = client
        self.replies = []
        client.on_cell_executed = lambda **kw: self.replies.append(kw["execute_reply"])

    def run(self, source, ok=True):
        import nbformat

        cell = nbformat.v4.new_code_cell(source)
        self.client.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.client.nb.cells) - 1)
        if ok:
            assert errors(cell.outputs) == [], source
        return cell.outputs, self.replies[-1]["content"]


def errors(outputs):
    return [o for o in outputs if o["output_type"] == "error"]


def stdout(outputs):
    return "".join(o["text"] for o in outputs
                   if o["output_type"] == "stream" and o["name"] == "stdout")


def stderr(outputs):
    return "".join(o["text"] for o in outputs
                   if o["output_type"] == "stream" and o["name"] == "stderr")


def results(outputs, mime):
    return [o["data"][mime] for o in outputs
            if o["output_type"] in ("execute_result", "display_data") and mime in o["data"]]
