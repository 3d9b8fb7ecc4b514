# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attributes shared by tfprov's fact-reading modules: they change nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Reads the node only, so it runs unchanged in check mode.
    support: full
  diff_mode:
    description: Changes nothing, so there is no diff.
    support: none
"""
