; Markdown tag query: one `section` unit per heading, nested by heading level

(section (atx_heading heading_content: (inline) @name)) @definition.section
(section . (setext_heading heading_content: (paragraph) @name)) @definition.section
