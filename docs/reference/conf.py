# Sphinx configuration of tfprov's documentation site: the guides in docs/*.md (MyST) and the tfprov.gpu collection
# reference that antsibull-docs generates into docs/reference/rst/ (`make docs`; not committed).
# Made by `antsibull-docs sphinx-init --use-current --dest-dir docs/reference tfprov.gpu` (antsibull-docs 2.28.0),
# then changed: the source directory is docs/ (the guides beside the reference), no intersphinx (the build runs
# offline: every inventory would be fetched from the network), and no theme feature that loads anything remote.

project = 'tfprov.gpu'
copyright = 'tfprov maintainers'

title = 'tfprov: guides and the tfprov.gpu collection reference'
html_short_title = 'tfprov'

extensions = ['sphinx.ext.autodoc', 'sphinx_antsibull_ext', 'myst_parser']

root_doc = 'index'
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
# The source directory is docs/: leave out the build output and this directory's own files.
exclude_patterns = ['reference/build', 'reference/*.py', 'reference/*.cfg']

# The guides link to each other's headings as GitHub does (`clouds.md#aws-nodes-from-a-cluster-spec-...`).
myst_heading_anchors = 4

pygments_style = 'ansible'

highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
# The theme's tracking, search, advertising and sidebar-banner features load remote scripts and images: all off,
# so the site is self-contained (fonts, scripts and styles come from the build's _static/).
html_theme_options = {
    'show_extranav': False,
    'show_rtd_ethical_ads': False,
    'satellite_tracking': False,
    'display_version': False,
}

display_version = False

html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

default_role = 'any'

nitpicky = True

# The guides link to files outside docs/ (README.md, the roles' READMEs, bench/README.md): links on GitHub, plain
# text here.
nitpick_ignore_regex = [('myst', r'/.*/((roles/[a-z_]+|bench)/)?README')]

# The generated reference points at pages of docs.ansible.com (other collections' plugins, Ansible's common return
# values, configuration settings and their environment variables), which antsibull-docs' own conf.py resolves
# through intersphinx: a download of docs.ansible.com's inventory at every build. Offline, these targets - and only
# these - become plain links to docs.ansible.com; any other unresolved reference stays a warning, so an error.
_ANSIBLE_DOCS = 'https://docs.ansible.com/ansible/latest/'
_ANSIBLE_LABELS = {
    'common_return_values': 'reference_appendices/common_return_values.html',
    'action_plugins': 'plugins/action.html',
    'callback_plugins': 'plugins/callback.html',
    'ansible_configuration_settings': 'reference_appendices/config.html',
}


def _ansible_docs_link(app, env, node, contnode):
    import re

    from docutils import nodes

    target, reftype = node.get('reftarget', ''), node.get('reftype')
    url = None
    if reftype in ('ref', 'any') and target in _ANSIBLE_LABELS:
        url = _ANSIBLE_DOCS + _ANSIBLE_LABELS[target]
    elif reftype in ('ref', 'any') and not target.startswith('ansible_collections.tfprov.gpu.'):
        found = re.fullmatch(r'ansible_collections\.([a-z0-9_]+)\.([a-z0-9_]+)\.([a-z0-9_]+_[a-z]+)', target)
        if found:
            url = _ANSIBLE_DOCS + 'collections/%s/%s/%s.html' % found.groups()
    elif reftype == 'envvar' and target.startswith('ANSIBLE_'):
        url = _ANSIBLE_DOCS + 'reference_appendices/config.html#envvar-' + target
    if url is None:
        return None
    text = contnode.astext() if contnode is not None else target
    return nodes.reference('', '', nodes.inline(text, text), refuri=url, internal=False)


def setup(app):
    app.connect('missing-reference', _ansible_docs_link)
