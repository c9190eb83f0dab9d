{{ container.name }}
