// A TypeDoc plugin: every exported options type (a name ending in Options or
// Config) and each of its properties needs a comment. TypeDoc's own
// `requiredToBeDocumented` goes by kind, so it cannot ask this of option
// properties without asking it of every property of every type.
import { Application, ReflectionKind } from 'typedoc';

const OPTIONS_NAME = /(Options|Config)$/;

const documented = (reflection) =>
  reflection.hasComment() || (reflection.signatures ?? []).some((signature) => signature.hasComment());

/** @param {Application} app */
export function load(app) {
  app.on(Application.EVENT_VALIDATE_PROJECT, (project) => {
    const types = project.getReflectionsByKind(ReflectionKind.Interface | ReflectionKind.TypeAlias);
    for (const type of types) {
      if (!OPTIONS_NAME.test(type.name)) continue;
      if (!type.hasComment()) app.logger.warn(`${type.getFriendlyFullName()}: an options type without a comment`);
      // an alias of a literal type keeps its members on the literal's declaration
      const members = type.children ?? type.type?.declaration?.children ?? [];
      for (const member of members) {
        if (!member.kindOf(ReflectionKind.Property | ReflectionKind.Method)) continue;
        if (!documented(member)) app.logger.warn(`${member.getFriendlyFullName()}: an option without a comment`);
      }
    }
  });
}
