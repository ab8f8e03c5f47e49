"""The scheduling core: Volcano's session, actions and plugins, with reasons in numbers."""
