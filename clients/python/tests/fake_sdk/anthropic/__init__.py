"""A stand-in for the Anthropic Python SDK (package `anthropic`) in memoryd_client's tests.

The SDK is not served by this machine's package registries. This package defines only what
MemorydMemoryTool uses, under the SDK's documented names, so that the tests check the adapter
against them: `anthropic.lib.tools.BetaAbstractMemoryTool` and `anthropic.lib.tools.ToolError`
(see lib/tools/__init__.py for where each comes from). memoryd is not faked: the tests run the
tool against a live memoryd.
"""
